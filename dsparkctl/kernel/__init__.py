"""dsparkctl's bundled sparse-MLA decode kernel for DeepSeek-V4 (FlashMLA "MODEL1" FP8 cache).

Submodules: ``layout`` (the paged FP8 cache format: quantize / dequantize), ``reference``
(a torch reference with FlashMLA semantics), ``build`` (compile the CUDA extension),
``ops`` (the validated Python API over the compiled torch op). Nothing here imports torch
at package import time, so ``dsparkctl doctor`` can import the package cheaply.
"""
