"""textcheck: the classifiers flag real degeneration where it starts and stay quiet on
healthy technical prose (code, lists, tables, numbers, JSON, math)."""

from __future__ import annotations

import importlib.metadata as md

import pytest

from dsparkctl.textcheck import (
    DOUBLED_REAL_WORDS,
    check_text,
    check_token_ids,
    find_loops,
    lex,
    strongest_first,
)

# Seed 000, as reported: greedy DSpark output on SM120 + FlashInfer 0.6.18.
SEED_000 = ("To understand how a B-tree maintains its balance is balanced, its balance is, we can "
            "be, let's, and why it, ... and the, and the, the, the, the, the, the,")

HEALTHY: dict[str, str] = {}
HEALTHY["btree"] = '''A B-tree keeps itself balanced by growing and shrinking at the root rather than at the leaves. Every node except the root holds between t-1 and 2t-1 keys, where t is the minimum degree; for t = 3 that means 2 to 5 keys per node. Because all leaves sit at the same depth, a lookup touches at most O(log_t n) nodes.

## Insertion

1. Walk down from the root to the leaf where the key belongs.
2. If a node on the way is full (2t-1 keys), split it *before* descending: the median key moves up into the parent, and the two halves become siblings.
3. Insert the key into the leaf, keeping the keys sorted.

Splitting proactively means we never have to walk back up the tree. When the root itself is full, we create a new root with the old one as its only child and split that child; this is the only way the height increases.

## Deletion

Deletion is the mirror image, with a few more cases:

- If the key is in a leaf with at least t keys, remove it directly.
- If the key is in an internal node, replace it with its predecessor or successor, then delete that from the child.
- If a child we are about to descend into has only t-1 keys, first borrow a key from a sibling (a rotation through the parent) or merge it with a sibling.

Here is a compact insertion routine in Python:

```python
def insert(tree, key):
    root = tree.root
    if len(root.keys) == 2 * tree.t - 1:
        new_root = Node(leaf=False)
        new_root.children.append(root)
        split_child(new_root, 0, tree.t)
        tree.root = new_root
    insert_nonfull(tree.root, key, tree.t)

def insert_nonfull(node, key, t):
    i = len(node.keys) - 1
    if node.leaf:
        node.keys.append(None)
        while i >= 0 and key < node.keys[i]:
            node.keys[i + 1] = node.keys[i]
            i -= 1
        node.keys[i + 1] = key
    else:
        while i >= 0 and key < node.keys[i]:
            i -= 1
        i += 1
        if len(node.children[i].keys) == 2 * t - 1:
            split_child(node, i, t)
            if key > node.keys[i]:
                i += 1
        insert_nonfull(node.children[i], key, t)
```

In practice databases pick t so that one node fills a disk page: with 4 KiB pages and 16-byte entries, a node holds roughly 250 keys, so a tree of height 3 indexes about 15.6 million rows. That is why B-trees, and their B+-tree variant with all values in the leaves, dominate on-disk indexes in PostgreSQL, MySQL (InnoDB) and SQLite.
'''

HEALTHY["table_json"] = '''Here is a comparison of the three serving configurations we measured on 4x RTX PRO 6000 (SM120), all with DeepSeek-V4-Flash and FP8 KV cache:

| Config | TP | DP attention | Speculative | Decode tok/s | Accept len |
|---|---|---|---|---|---|
| A | 4 | no | none | 80.8 | - |
| B | 4 | no | DSpark, gamma 5 | 223.7 | 4.10 |
| C | 4 | yes | DSpark, gamma 5 | 231.2 | 4.05 |
| D | 2 | no | DSpark, gamma 5 | 140.3 | 4.12 |

The request we sent to each server looked like this:

```json
{
  "text": "Explain how a B-tree stays balanced.",
  "sampling_params": {
    "temperature": 0,
    "max_new_tokens": 1000,
    "ignore_eos": true
  }
}
```

and the relevant part of the answer was:

```json
{"meta_info": {"id": "a1", "finish_reason": {"type": "length", "length": 1000}, "prompt_tokens": 12, "completion_tokens": 1000, "spec_accept_length": 4.1, "spec_accept_rate": 0.62, "spec_verify_ct": 244}}
```

A few observations:

* Config B is 2.8x faster than A for a single stream, because each verify step accepts about four tokens.
* Config C adds DP attention; throughput rises by 3%, but see the caveat below.
* The accept length barely moves between B, C and D, which is what you would expect: it depends on the draft model and the text, not on the parallel layout.

Caveat: with DP attention and TP4 at depth 5, a small fraction of requests (~1%) came back corrupted in our long runs, so we do not recommend C in production yet. The settings file for B was:

    --tp-size 4 --kv-cache-dtype fp8_e4m3 --max-running-requests 10
    --cuda-graph-max-bs-decode 10 --speculative-algorithm DSPARK

Overall, B is the configuration we would deploy today; D is a reasonable fallback on a two-GPU box.
'''

HEALTHY["math"] = r'''To see why the attention output is a convex combination of the value vectors, start from the definition. For a query $q \in \mathbb{R}^d$ and keys $k_1, \dots, k_n$, the scores are $s_i = q^\top k_i / \sqrt{d}$ and the weights are

$$
p_i = \frac{\exp(s_i - m)}{\sum_{j=1}^{n} \exp(s_j - m)}, \qquad m = \max_j s_j .
$$

Subtracting $m$ changes nothing mathematically, because the factor $e^{-m}$ cancels between numerator and denominator, but it keeps every exponent at or below zero, so nothing overflows in fp16 or bf16. The output is

\[ o = \sum_{i=1}^{n} p_i v_i , \]

and since every $p_i \ge 0$ and $\sum_i p_i = 1$, the output lies in the convex hull of the $v_i$.

When the keys are split into chunks (split-KV), each chunk c computes a partial maximum m_c, a partial sum l_c = sum over i in c of exp(s_i - m_c), and a partial output o_c. The combine step uses m = max_c m_c and

o = (sum_c exp(m_c - m) * l_c * o_c) / (sum_c exp(m_c - m) * l_c).

A chunk with no valid keys has m_c = -inf and l_c = 0. Naively, exp(m_c - m) with m = -inf gives exp(-inf - (-inf)) = exp(NaN) = NaN, which is why the combine must skip empty chunks explicitly. As a sanity check, take n = 4, d = 1, q = 1 and keys 0, 1, 2, 3: the scores are 0, 1, 2, 3, the maximum is 3, and the weights are proportional to e^-3, e^-2, e^-1 and 1, that is 0.032, 0.087, 0.237 and 0.644 after normalisation. They sum to 1.000, as they must.

Finally, the cost: each query token reads topk keys of d_qk = 512 dimensions and writes d_v = 512 outputs per head, so the work is 2 * h * topk * (d_qk + d_v) FLOPs; for h = 64 and topk = 128 that is 16.8 MFLOP per token.
'''

HEALTHY["story"] = '''The lighthouse at Kerrow Point had been automated in 1987, but Margaret still walked up the hill every evening, as her father had, and his father before him. She told herself it was for the exercise. The truth, which she admitted only to the gulls, was that she liked to see the lamp come on.

That autumn the storms came early. On the first night of October the wind tore the slates off the boathouse roof, and by morning the harbour was full of kelp, broken crates and one very confused seal. Tom Ashby, who ran the ferry to the island, stood on the quay with his hands in his pockets and declared that he had never seen anything like it, which was what he said every year.

"You'll not be crossing today, then," Margaret said.

"Not today, not tomorrow, and not if you paid me double," he said. "Though if you did pay me double, I'd think about it."

She laughed and went on up the hill. Halfway, she stopped. Something was wrong with the light. It was turning, as it should, but every third sweep it faltered, dimmed, and then recovered, like a man catching his breath. Forty years of watching had taught her the rhythm of that beam better than her own heartbeat, and this was not it.

Inside, the lamp room smelled of oil and salt. The new controller, a grey box the engineers from the mainland had installed in the spring, blinked a row of green lights at her, all of them cheerful, none of them honest. She opened the cabinet, found the fuse for the rotation motor and saw that it was scorched black on one side. There was a spare in the drawer, where her father had always kept one, whatever the manuals said.

Ten minutes later the beam swept out over the water, steady and even, and far out past the reef a small fishing boat that had been drifting towards the rocks turned slowly, deliberately, back towards the harbour.
'''

HEALTHY["code_heavy"] = '''Below is a minimal CUDA kernel that copies a tensor, plus the launch code and a CMake snippet.

```cpp
#include <cuda_runtime.h>
#include <cstdio>

__global__ void copy_kernel(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[i];
    }
}

int main() {
    const int n = 1 << 20;
    float *in = nullptr, *out = nullptr;
    cudaMalloc(&in, n * sizeof(float));
    cudaMalloc(&out, n * sizeof(float));
    cudaMemset(in, 0, n * sizeof(float));
    cudaMemset(out, 0, n * sizeof(float));
    copy_kernel<<<(n + 255) / 256, 256>>>(in, out, n);
    cudaDeviceSynchronize();
    printf("done\\n");
    cudaFree(in);
    cudaFree(out);
    return 0;
}
```

```cmake
cmake_minimum_required(VERSION 3.24)
project(copy LANGUAGES CXX CUDA)
set(CMAKE_CUDA_ARCHITECTURES 90a 120a 121a)
add_executable(copy copy.cu)
```

The test matrix we use for the kernel is a plain table of zeros and ones:

```
0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
0 1 0 1 0 1 0 1 0 1 0 1 0 1 0 1
```

A YAML config for the CI job:

```yaml
jobs:
  build:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v4
      - run: nvcc --version
      - run: cmake -B build -S . && cmake --build build -j
      - run: ./build/copy
```

Run it with `./build/copy`; on an H200 the copy of 4 MiB takes about 4 us, which is close to the 4.3 TB/s peak you would expect once launch overhead is taken into account. If you see `cudaErrorNoKernelImageForDevice`, the binary was not built for your GPU's architecture: add it to CMAKE_CUDA_ARCHITECTURES and rebuild.
'''

HEALTHY["numbers"] = '''Release notes, version 0.6.18 (2026-03-14)

Supported GPUs: SM90 (H100, H200), SM100 (B200), SM120 (RTX PRO 6000, RTX 5090) and SM121 (GB10). Tested with CUDA 12.8, 12.9, 13.0 and 13.1; driver 570.124.06 or newer.

Performance, single-stream decode, tokens per second (higher is better):

- H200, TP1: 112.4 -> 118.9 (+5.8%)
- B200, TP1: 151.0 -> 163.2 (+8.1%)
- RTX PRO 6000, TP4: 80.8 -> 92.3 (+14.2%)
- RTX 5090, TP2: 61.5 -> 70.0 (+13.8%)

Memory: peak usage dropped from 71.2 GiB to 68.9 GiB on the 128K-context benchmark, a 3.2% saving, mostly from freeing the 256-token page staging buffer after each call.

Fixes:

- Decode kernels now handle topk 192 and 256 for 8, 16, 32, 64 and 128 heads (#4380, #3817, #3923).
- A NaN in the split-KV combine when every split of a row was empty (#4121).
- Negative lengths are clamped to 0 instead of being read as 4294967292 (#30378).

Upgrade with pip install flashinfer-python==0.6.18 flashinfer-cubin==0.6.18. The jit-cache wheel must match exactly: 0.6.18 with 0.6.18, not 0.6.17. Phone support: +1 (555) 010-2030, 09:00-17:00 UTC, Monday to Friday.

Known issues: on GB10 (sm_121), set FLASHINFER_CUDA_ARCH_LIST=12.0f; the 0.6.16 and 0.6.17 wheels do not contain the topk 192 kernels; expect 1-2% lower throughput at batch sizes 1, 2, 4 and 8 compared with 0.6.17 because of the extra bounds check.
'''

HEALTHY["enumeration"] = '''Which languages does the toolchain support? In alphabetical order: Ada, C, C++, C#, Clojure, D, Elixir, Erlang, F#, Fortran, Go, Haskell, Java, Julia, Kotlin, Lua, Nim, OCaml, Perl, PHP, Python, R, Ruby, Rust, Scala, Swift, TypeScript and Zig. Of these, only C, C++, Fortran, Julia, Python and Rust can call CUDA directly; the rest go through a C ABI.

Yes, yes, I know: that is a long list. But it matters, because each of them has its own build system, its own package manager and its own opinion about where shared libraries live. The murmur of complaints from the Haskell users, for example, was about exactly that; so was the Mississippi team's issue with their assassin-themed benchmark names, which the tartar-sauce crowd found hilarious.

The variables are x, y and z; the constants are a, b and c. For the matrix case use i, j and k as indices, and keep n for the size.
'''


PARA = HEALTHY["btree"].split("## Insertion")[0]


def strong(issues):
    return [i for i in issues if i.strong]


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_healthy_prose_is_clean(name: str) -> None:
    assert check_text(HEALTHY[name]) == []


def test_healthy_prose_truncated_anywhere_is_clean() -> None:
    """Generations stop mid-sentence or mid-code-block at max_new_tokens."""
    for name, text in HEALTHY.items():
        for cut in range(200, len(text), 331):
            assert strong(check_text(text[:cut])) == [], (name, cut)


def _real_descriptions() -> list[tuple[str, str]]:
    out = []
    for dist in ("rich", "typer", "pytest", "packaging", "psutil", "numpy", "torch", "pydantic"):
        try:
            desc = md.metadata(dist).get_payload()  # type: ignore[attr-defined]
        except md.PackageNotFoundError:
            continue
        if isinstance(desc, str) and len(desc) > 1000:
            out.extend((f"{dist}[{i}]", desc[i:i + 5000]) for i in range(0, len(desc), 5000))
    return out


def test_real_package_documentation_has_no_strong_issue() -> None:
    """Human-written READMEs (markdown/RST with code, tables, changelogs, URLs) are healthy."""
    chunks = _real_descriptions()
    assert len(chunks) >= 10
    bad = [(name, i.kind, i.quote) for name, text in chunks for i in strong(check_text(text))]
    assert bad == []


def test_seed_000_literal_is_flagged_where_it_starts() -> None:
    issues = check_text(SEED_000)
    assert strong(issues)
    first = min(issues, key=lambda i: i.start)
    assert first.category == "degeneration"
    # the collapse starts with the content-free clauses, well before the loop
    assert first.start == SEED_000.index("we can be")
    assert first.quote.startswith("we can be, let's")
    assert first.before.endswith("its balance is,")
    loop = next(i for i in issues if i.kind == "repetition-loop")
    assert loop.quote.startswith("the, the, the")


def test_seed_000_as_generated_to_the_length_limit() -> None:
    text = PARA + SEED_000 + " the," * 300
    issues = check_text(text)
    kinds = {i.kind for i in strong(issues)}
    assert {"repetition-loop", "dominant-token", "clause-fragments"} <= kinds
    first = min(issues, key=lambda i: i.start)
    assert len(PARA) <= first.start <= len(PARA) + len(SEED_000)
    assert first.word_index == next(k for k, x in enumerate(lex(text)) if x.start == first.start)
    loop = next(i for i in issues if i.kind == "repetition-loop")
    assert loop.data["unit"] == "the,"
    assert loop.data["repeats"] >= 300


@pytest.mark.parametrize("unit", [
    "The B-tree is balanced because every node splits at the median. ",
    "and then the tree, ",
    "the ",
])
def test_exact_loops_after_a_healthy_paragraph(unit: str) -> None:
    text = PARA + unit * 40
    loop = next(i for i in check_text(text) if i.kind == "repetition-loop")
    assert loop.start == len(PARA)
    assert loop.strong


def test_near_loop_with_variations_is_flagged() -> None:
    words = ["left", "right", "new", "old", "full", "root", "leaf", "next", "last", "first",
             "empty", "small", "large", "inner", "outer", "upper", "lower", "middle", "spare",
             "shared", "hot", "cold", "dense", "sparse", "fresh", "stale", "main", "side",
             "early", "late", "odd", "even"]  # no two sentences alike: no exact period
    text = PARA + " ".join(f"The tree is balanced because the {w} node splits at the median key."
                           for w in words)
    issues = strong(check_text(text))
    assert [i.kind for i in issues] == ["repeated-ngrams"]
    assert issues[0].start == len(PARA)


def test_repetitive_list_that_moves_on_is_only_weak() -> None:
    entries = "\n".join(f"- Version {v}: added new functions for NVML {v}. See NVML documentation "
                        f"for more information." for v in ("2.285", "3.295", "4.304", "5.319",
                                                           "6.340", "7.346", "7.352", "10.418"))
    text = "Release notes\n\n" + entries + "\n\n" + HEALTHY["story"]
    assert strong(check_text(text)) == []


def test_loop_inside_code_needs_more_repeats() -> None:
    ok = PARA + "```python\nx = [None, None, None, None, None, None, None, None]\n```\n"
    assert check_text(ok) == []
    bad = PARA + "```python\ndef f(x):\n" + "    return None\n" * 60
    loop = next(i for i in check_text(bad) if i.kind == "repetition-loop")
    assert loop.data["in_code"] and loop.quote.startswith("return None return None")


def test_replacement_characters() -> None:
    text = PARA + "The median key moves up into the par\ufffdent, and the halves bec\ufffdome siblings."
    [issue] = check_text(text)
    assert issue.kind == "replacement-char" and issue.category == "garble" and issue.strong
    assert issue.start == text.index("\ufffd") and issue.data["count"] == 2


def test_trailing_replacement_character_is_a_cut_multibyte_char() -> None:
    assert check_text(PARA + "The answer is \ufffd") == []


def test_control_characters() -> None:
    text = PARA + "The node\x07 splits."
    [issue] = check_text(text)
    assert issue.kind == "control-char" and issue.start == text.index("\x07")


def test_single_character_spray() -> None:
    text = PARA + "When the root is full we t h e r e i s a n e w r o o t and so on."
    [issue] = check_text(text)
    assert issue.kind == "char-spray" and issue.start == text.index("t h e r e")


def test_punctuation_salad() -> None:
    text = PARA + "The median key " + ", . ; , . , ; : . , , ; . . , ; ," * 4
    issue = next(i for i in check_text(text) if i.kind == "punctuation-density")
    assert issue.strong and issue.start >= len(PARA)


def test_doubled_syllables_and_real_words() -> None:
    text = PARA + "The balancebalance of the tree treetree depends on nodenode and mergemerge."
    [issue] = check_text(text)
    assert issue.kind == "doubled-syllable" and issue.strong
    assert issue.start == text.index("balancebalance")
    assert set(issue.data["words"]) == {"balancebalance", "treetree", "nodenode", "mergemerge"}
    real = ("The murmur along the Mississippi was about an assassination attempt, couscous, "
            "tartar sauce and an entente.")
    assert "murmur" in DOUBLED_REAL_WORDS
    assert check_text(PARA + real) == []


def test_stray_characters_inside_words() -> None:
    text = PARA + "The median key mov€s up into the parent, and th¬e two halves becom§e siblings."
    [issue] = check_text(text)
    assert issue.kind == "stray-characters" and issue.strong
    assert issue.start == text.index("mov€s")
    assert check_text(PARA + "AT&T, and/or, key=value, naïve café, 3×3 and x→y are fine.") == []


def test_find_loops_smallest_period_earliest_start() -> None:
    seq = list("abcdefg") + list("xy") * 10 + list("hij")
    [loop] = find_loops(seq, min_repeats=5, min_span=10, long_min_repeats=99, long_min_span=999)
    assert (loop.start, loop.period, loop.span) == (7, 2, 20)
    assert find_loops(list("abcdefghij"), min_repeats=2, min_span=2, long_min_repeats=9,
                      long_min_span=99) == []


def test_token_id_loop_gives_the_token_offset() -> None:
    ids = list(range(100, 220)) + [7, 8] * 50
    loop = check_token_ids(ids)
    assert loop is not None and loop.start == 120 and loop.period == 2
    text = PARA + " the," * 50
    issues = check_text(text, token_ids=ids)
    head = strongest_first(issues)[0]
    assert head.category == "degeneration" and head.token_offset == 120


def test_token_loop_invisible_in_text_is_still_reported() -> None:
    ids = list(range(100, 220)) + [5] * 40
    issues = check_text(HEALTHY["story"], token_ids=ids)
    [issue] = issues
    assert issue.kind == "token-loop" and issue.token_offset == 120


def test_issue_json_has_offsets_and_quote() -> None:
    [issue, *_] = strongest_first(check_text(PARA + " the," * 40))
    obj = issue.to_json()
    assert obj["char_offset"] == issue.start and obj["quote"] and "word_index" in obj


def test_a_repeated_paragraph_is_an_exact_loop_past_64_tokens() -> None:
    """A collapsing long generation repeats a whole paragraph (here ~100 tokens); the all-period
    scan stops at 64, the anchored one finds it."""
    words = ["left", "right", "new", "old", "full", "root", "leaf", "next"]
    unit = " ".join(f"The tree is balanced because the {w} node splits at the median key."
                    for w in words) + " "
    text = PARA + unit * 4
    loop = next(i for i in check_text(text) if i.kind == "repetition-loop")
    assert loop.start == len(PARA) and loop.data["period_tokens"] > 64
    assert loop.data["repeats"] >= 3.9


def test_loop_inside_unspaced_script_and_blank_output() -> None:
    healthy = "这是一个正常的中文句子，没有任何重复的问题。我们今天讨论模型的推理性能和准确性。"
    assert check_text(healthy) == []  # its full-width punctuation is not a stray symbol
    assert check_text("日本語の文章です。これは普通の文章で、問題はありません。") == []
    loop = next(i for i in check_text(healthy + "的" * 300) if i.kind == "repetition-loop")
    assert loop.data["unit"] == "的" and loop.start == len(healthy)
    assert [i.kind for i in check_text("")] == ["blank-output"]
    assert [i.kind for i in check_text("\n" * 900)] == ["blank-output"]
    tail = next(i for i in check_text(PARA + "\n" * 900) if i.kind == "whitespace-run")
    assert tail.start == len(PARA.rstrip()) and tail.strong  # PARA ends in a blank line
    assert not [i for i in check_text(PARA + "\n" * 20 + PARA) if i.kind == "whitespace-run"]


def test_padding_inside_lines_is_not_a_whitespace_run() -> None:
    """An aligned markdown table pads short cells with long runs of spaces, and a code block
    may hold a whitespace-only line: neither is a degeneration (only runs of line breaks are)."""
    long_cell = "x" * 139
    rows = [f"| {a:<12} | {b:<140} |" for a, b in
            (("name", "value"), ("alpha", long_cell), ("beta", "short"), ("gamma", "also short"))]
    table = PARA + "\n".join(rows) + "\n"
    assert not [i for i in check_text(table) if i.kind == "whitespace-run"]
    code = PARA + "```python\ndef f():\n" + " " * 130 + "\n    return 1\n```\n"
    assert not [i for i in check_text(code) if i.kind == "whitespace-run"]
    spaced = PARA + " \n" * 70
    assert [i.kind for i in check_text(spaced) if i.kind == "whitespace-run"] == ["whitespace-run"]
