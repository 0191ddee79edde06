"""Build the sparse-MLA kernel extension: the one build step of the device scripts.

    PYTHONPATH=TREE python3 bench/build_kernel.py ARCH OUT_DIR LOG [NVCC_FLAG ...]

Builds with the dsparkctl found on PYTHONPATH and prints the .so's path. kernel_ab.sh points
PYTHONPATH at an older tree, whose build_extension may predate ``extra_nvcc``. So the flags are
passed only when some are given.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print("usage: python3 bench/build_kernel.py ARCH OUT_DIR LOG [NVCC_FLAG ...]", file=sys.stderr)
        return 2
    from dsparkctl.kernel import build

    arch, out_dir, log, *flags = argv
    kwargs = {"extra_nvcc": flags} if flags else {}
    print(build.build_extension(arch, Path(out_dir), Path(log), **kwargs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
