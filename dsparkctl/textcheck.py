"""Degeneration and garble classifiers for long greedy generations.

A DSpark server with wrong verify-path numerics does not crash: it starts,
passes short prompts, and then, about a paragraph in, its greedy output turns
into clause fragments and a loop ("... and the, and the, the, the, the"), or
sprouts stray characters (KNOWLEDGE §1, §6, seed 000). The operator needs to
know *that* an output went bad and *where* it started, so every detector here
returns the offending span with its character offset, its lexical-token
offset and a short quote.

The detectors are pure functions over a string (and, where the server gave
them, the output token ids). They are tuned to stay silent on healthy
technical answers -- prose with code blocks, markdown lists and tables,
numbers, JSON and math -- because a smoke test that cries wolf gets switched
off. The statistical detectors (dominant token, repeated n-grams, punctuation
density, clause fragments, doubled syllables, character spray) therefore read
only *prose*: fenced code, math, inline code and table rows are masked out,
since their repetition and punctuation are structure, not decay. The exact
loop detector and the U+FFFD / control-character checks read everything, with
stricter loop thresholds inside code.

``strong`` issues are errors (a healthy model does not produce them); weak
ones are warnings worth a look.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Category = Literal["degeneration", "garble"]

QUOTE_CHARS = 80
CONTEXT_CHARS = 60


@dataclass(frozen=True)
class TextIssue:
    """One sign of a broken generation, anchored where it starts."""

    kind: str
    category: Category
    strong: bool
    start: int  # character offset in the text
    end: int  # character offset where the evidence ends
    word_index: int  # index of the lexical token (word or punctuation mark) at ``start``
    quote: str  # the text from ``start``, whitespace collapsed, shortened
    before: str  # the text just before ``start``: what was still healthy
    message: str
    token_offset: int | None = None  # output-token index, when found in the token ids
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "category": self.category,
            "strong": self.strong,
            "char_offset": self.start,
            "end": self.end,
            "word_index": self.word_index,
            "quote": self.quote,
            "before": self.before,
            "message": self.message,
        }
        if self.token_offset is not None:
            out["token_offset"] = self.token_offset
        if self.data:
            out["data"] = self.data
        return out


@dataclass(frozen=True)
class Thresholds:
    """Where evidence becomes an issue. Defaults are tuned on the tests' corpora."""

    # exact loops in prose: a unit repeated back to back
    loop_min_repeats: float = 6.0
    loop_min_span: int = 12
    loop_long_min_repeats: float = 3.0
    loop_long_min_span: int = 48
    loop_max_period: int = 64
    # longer units (a paragraph or a whole answer repeated) are checked at the periods
    # where a repeated anchor n-gram recurs, up to this many tokens
    loop_long_max_period: int = 1024
    loop_anchor_ngram: int = 8
    # exact loops anywhere, code included (code legitimately repeats a little)
    code_loop_min_repeats: float = 16.0
    code_loop_min_span: int = 32
    code_loop_long_min_repeats: float = 6.0
    code_loop_long_min_span: int = 96
    # output token ids (when the server returns them)
    token_loop_min_repeats: float = 8.0
    token_loop_min_span: int = 16
    token_loop_long_min_repeats: float = 4.0
    token_loop_long_min_span: int = 64
    # one word owning a window of prose
    dominant_window: int = 40
    dominant_min_words: int = 20
    dominant_share: float = 0.5
    dominant_max_distinct: float = 0.35
    # near-loops: trigrams that recur inside a window of prose
    ngram_n: int = 3
    ngram_window: int = 60
    ngram_repeat_share: float = 0.6
    ngram_persist_share: float = 0.5
    # runs of clauses made only of function words ("we can be, let's, and why it, and the")
    fragment_run: int = 5
    fragment_max_words: int = 4
    # punctuation marks among the non-space characters of a prose window
    punct_window_chars: int = 100
    punct_weak_share: float = 0.35
    punct_strong_share: float = 0.5
    # space-separated single letters in a row ("t h e r e")
    spray_run: int = 8
    # words with an immediately doubled syllable ("balancebalance")
    doubled_min_count: int = 2
    doubled_strong_count: int = 4
    # symbols or a change of script inside a word ("mov€s", "node节点s")
    stray_min_count: int = 2
    stray_strong_count: int = 3


DEFAULT_THRESHOLDS = Thresholds()

def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Function words: a clause made only of these carries no content. Kept small and
# English-only on purpose; a content word anywhere in a clause clears it.
STOPWORDS = _wordset("""
a an the and or but nor so yet if then than that this these those there here
is are was were be been being am do does did done have has had having can could
will would shall should may might must it its it's we us our you your they them
their he him his she her i me my of to in on at by for with as from into onto
about over under up down out off why how what which who whom whose when where
let let's not no just also too very all any some each both such own same other
""")

# Real words whose spelling doubles a syllable of three or more letters.
DOUBLED_REAL_WORDS = _wordset("""
murmur murmurs murmured murmuring couscous tartar tartare bonbon bonbons beriberi
chichi tsetse pawpaw pawpaws booboo dumdum cancan mahimahi froufrou muumuu
pompom pompoms tomtom tomtoms bulbul mississippi assassin assassins assassinate
assassinated assassination assassinations entente ententes hotshot
""")

# Lexical tokens: numbers (with their decimal points and separators), ellipses,
# words (with an inner apostrophe), single punctuation/symbol characters.
_LEX = re.compile(
    r"\d+(?:[.,:/]\d+)*%?"  # 3.14, 1,000, 12:30, 4/5
    r"|\.{2,}|…"  # ellipsis
    r"|[^\W\d_]+(?:['’][^\W\d_]+)*(?:\d+[^\W\d_]*)*"  # words, let's, sm120a
    r"|_+\w*"
    r"|[^\w\s]",
    re.UNICODE,
)
_PROSE_PUNCT = frozenset(",;:.!?…")
_CODE_SYMBOLS = frozenset("{}[]()<>=\"'`_/\\|#*+^$&%@~")

_FENCE = re.compile(r"^[ \t]*(```+|~~~+)[^\n]*$", re.MULTILINE)
_MATH_BLOCKS = (
    re.compile(r"\$\$.+?\$\$", re.DOTALL),
    re.compile(r"\\\[.+?\\\]", re.DOTALL),
    re.compile(r"\\\(.+?\\\)", re.DOTALL),
    re.compile(r"(?<![\w$\\])\$[^$\n]+?\$"),
    re.compile(r"`[^`\n]+`"),
)
_URL = re.compile(r"\b(?:https?|ftp|file)://\S+|\bwww\.\S+")
_TABLE_ROW = re.compile(r"^[ \t]*\|.*$|^[^\n]*\|[^\n]*\|[^\n]*$", re.MULTILINE)
_LINE = re.compile(r"[^\n]+")
_DOUBLED = re.compile(r"\b[^\W\d_]*?([^\W\d_]{3,})\1[^\W\d_]*\b", re.UNICODE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_MOJIBAKE = re.compile(r"Ã[\u0080-\u00bf]|â€[\u0080-\u00bf™œ\u009d]|[ĠĊ]\w")


@dataclass(frozen=True)
class Lex:
    """One lexical token of the text."""

    text: str  # lower-cased
    start: int
    end: int
    is_word: bool  # contains a letter
    is_number: bool
    prose: bool  # outside code, math, inline code and tables


def lex(text: str) -> list[Lex]:
    """Words, numbers and punctuation with offsets, each marked prose or not."""
    masked = _masked_ranges(text)
    out: list[Lex] = []
    mi = 0
    for m in _LEX.finditer(text):
        s, e = m.start(), m.end()
        while mi < len(masked) and masked[mi][1] <= s:
            mi += 1
        in_mask = mi < len(masked) and masked[mi][0] <= s < masked[mi][1]
        tok = m.group(0)
        is_number = tok[0].isdigit()
        is_word = not is_number and any(ch.isalpha() for ch in tok)
        out.append(Lex(tok.lower(), s, e, is_word, is_number, not in_mask))
    return out


def _masked_ranges(text: str) -> list[tuple[int, int]]:
    """Character ranges that are structure, not prose: code, math, tables, symbol-heavy lines.

    An unclosed fence masks to the end: a generation cut off by max_new_tokens
    inside a code block is still code.
    """
    ranges: list[tuple[int, int]] = []
    fences = list(_FENCE.finditer(text))
    i = 0
    while i < len(fences):
        start = fences[i].start()
        marker = fences[i].group(1)[0]
        j = i + 1
        while j < len(fences) and fences[j].group(1)[0] != marker:
            j += 1
        if j < len(fences):
            ranges.append((start, fences[j].end()))
            i = j + 1
        else:
            ranges.append((start, len(text)))
            break
    for pat in _MATH_BLOCKS:
        ranges.extend(m.span() for m in pat.finditer(text))
    ranges.extend(m.span() for m in _TABLE_ROW.finditer(text))
    ranges.extend(m.span() for m in _URL.finditer(text))
    for m in _LINE.finditer(text):
        # Unfenced code, data dumps and equations: many code symbols or digits.
        # Prose punctuation does not count, so a spray of commas stays prose.
        line = m.group(0)
        nonspace = [ch for ch in line if not ch.isspace()]
        if len(nonspace) >= 4:
            sym = sum(1 for ch in nonspace if ch in _CODE_SYMBOLS)
            digits = sum(1 for ch in nonspace if ch.isdigit())
            if sym / len(nonspace) >= 0.08 or (sym + digits) / len(nonspace) >= 0.25:
                ranges.append(m.span())
    return _merge(ranges)


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(ranges):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _quote(text: str, start: int, n: int = QUOTE_CHARS) -> str:
    q = " ".join(text[start:start + n * 2].split())
    return q if len(q) <= n else q[: n - 1] + "…"


def _before(text: str, start: int, n: int = CONTEXT_CHARS) -> str:
    b = " ".join(text[max(0, start - n * 2):start].split())
    return b if len(b) <= n else "…" + b[-(n - 1):]


def _issue(text: str, lexes: Sequence[Lex], kind: str, category: Category, strong: bool,
           start: int, end: int, message: str, **data: Any) -> TextIssue:
    word_index = _index_at(lexes, start)
    return TextIssue(kind=kind, category=category, strong=strong, start=start, end=end,
                     word_index=word_index, quote=_quote(text, start),
                     before=_before(text, start), message=message, data=data)


def _index_at(lexes: Sequence[Lex], offset: int) -> int:
    lo, hi = 0, len(lexes)
    while lo < hi:
        mid = (lo + hi) // 2
        if lexes[mid].end <= offset:
            lo = mid + 1
        else:
            hi = mid
    return lo


# ---------------------------------------------------------------- exact loops


@dataclass(frozen=True)
class Loop:
    """``seq[start:start+span]`` is one unit of ``period`` items repeated ``repeats`` times."""

    start: int
    period: int
    span: int

    @property
    def repeats(self) -> float:
        return self.span / self.period


def _anchor_periods(seq: Sequence[Hashable], lo: int, hi: int, k: int) -> list[int]:
    """Distances in (lo, hi] between consecutive occurrences of one k-gram: the only periods
    above ``lo`` at which a back-to-back repetition can exist (its first k items recur one
    period later), so a long-unit scan need not try every period (O(n) candidates)."""
    last: dict[tuple[Hashable, ...], int] = {}
    periods: set[int] = set()
    for i in range(len(seq) - k + 1):
        key = tuple(seq[i:i + k])
        j = last.get(key)
        if j is not None and lo < i - j <= hi:
            periods.add(i - j)
        last[key] = i
    return sorted(periods)


def find_loops(seq: Sequence[Hashable], *, min_repeats: float, min_span: int,
               long_min_repeats: float, long_min_span: int, max_period: int = 64,
               unit_ok: Callable[[Loop], bool] | None = None, long_max_period: int = 0,
               anchor: int = 8) -> list[Loop]:
    """Maximal back-to-back repetitions, smallest period first, earliest first.

    A loop counts when it repeats often (``min_repeats`` and ``min_span``) or
    repeats a long unit a few times (``long_*``). ``unit_ok(loop)`` can veto
    loops (e.g. punctuation-only units, which are rules and separators, not decay).
    Every period up to ``max_period`` is scanned once: O(max_period * n). Above it, up to
    ``long_max_period``, only the periods where an ``anchor``-gram recurs are scanned: a
    paragraph that a collapsing generation repeats is longer than 64 tokens.
    """
    n = len(seq)
    found: list[Loop] = []
    periods = list(range(1, min(max_period, n // 2) + 1))
    if long_max_period > max_period:
        periods += _anchor_periods(seq, max_period, min(long_max_period, n // 2), anchor)
    for p in periods:
        i = 0
        while i + p < n:
            if seq[i] != seq[i + p]:
                i += 1
                continue
            j = i
            while j + p < n and seq[j] == seq[j + p]:
                j += 1
            span = j - i + p
            reps = span / p
            loop = Loop(i, p, span)
            if ((reps >= min_repeats and span >= min_span)
                    or (reps >= long_min_repeats and span >= long_min_span)) and (
                    unit_ok is None or unit_ok(loop)) and not any(_covers(f, loop) for f in found):
                found.append(loop)
            i = j + 1
    # A loop found at a larger period that starts earlier than the smaller-period
    # loop it contains is kept: it is where the repetition really begins.
    found.sort(key=lambda lp: (lp.start, lp.period))
    return found


def _covers(a: Loop, b: Loop) -> bool:
    return a.start <= b.start and b.start + b.span <= a.start + a.span


def _spaced(text: str, subset: Sequence[Lex], lp: Loop) -> bool:
    """Language loops are separate words; glued ones (ffff:ffff:ffff) are identifiers."""
    first, last = subset[lp.start], subset[lp.start + min(lp.span, 2 * lp.period) - 1]
    return any(ch.isspace() for ch in text[first.start:last.end])


def _has_word(items: Sequence[Hashable]) -> bool:
    return any(isinstance(t, str) and any(ch.isalpha() for ch in t) for t in items)


def _check_loops(text: str, lexes: Sequence[Lex], th: Thresholds) -> list[TextIssue]:
    issues: list[TextIssue] = []
    everything = [x.text for x in lexes]
    # In the prose pass a masked token (code, URL, table cell) is a unique marker,
    # so that a loop cannot bridge the structure between two prose stretches.
    prose_only: list[Hashable] = [x.text if x.prose else ("masked", i)
                                  for i, x in enumerate(lexes)]
    for seq, strict in ((prose_only, False), (everything, True)):
        if strict:
            kw = dict(min_repeats=th.code_loop_min_repeats, min_span=th.code_loop_min_span,
                      long_min_repeats=th.code_loop_long_min_repeats,
                      long_min_span=th.code_loop_long_min_span)
        else:
            kw = dict(min_repeats=th.loop_min_repeats, min_span=th.loop_min_span,
                      long_min_repeats=th.loop_long_min_repeats,
                      long_min_span=th.loop_long_min_span)

        def unit_ok(lp: Loop, seq: Sequence[Hashable] = seq, strict: bool = strict) -> bool:
            return _has_word(seq[lp.start:lp.start + lp.period]) and (
                strict or _spaced(text, lexes, lp))

        loops = find_loops(seq, max_period=th.loop_max_period, unit_ok=unit_ok,
                           long_max_period=th.loop_long_max_period,
                           anchor=th.loop_anchor_ngram, **kw)
        for lp in loops[:1]:
            k = lp.start
            while not lexes[k].is_word:  # report from a word, not from a stray comma
                k += 1
            first, last = lexes[k], lexes[lp.start + lp.span - 1]
            unit = " ".join(text[first.start:lexes[k + lp.period - 1].end].split())
            issues.append(_issue(
                text, lexes, "repetition-loop", "degeneration", True, first.start, last.end,
                f"{unit!r} repeated {lp.repeats:.0f} times back to back",
                unit=unit, repeats=round(lp.repeats, 1), period_tokens=lp.period,
                in_code=strict))
    issues.sort(key=lambda t: t.start)
    return issues[:1]


def _unspaced(ch: str) -> bool:
    """A letter of a script written without spaces between words (CJK, kana, Thai...)."""
    return ch >= "\u0e00" and ch.isalpha()


def _check_unspaced_loops(text: str, lexes: Sequence[Lex], th: Thresholds) -> list[TextIssue]:
    """Loops inside one run of unspaced script: "的的的..." is a single lexical token, so the
    word-level loop pass never sees it repeat. Scanned by character, units of such letters."""
    for x in lexes:
        if not x.prose or x.end - x.start < th.loop_min_span:
            continue
        chars = text[x.start:x.end]
        if sum(map(_unspaced, chars)) * 2 < len(chars):
            continue
        loops = find_loops(chars, min_repeats=th.token_loop_min_repeats,
                           min_span=th.token_loop_min_span,
                           long_min_repeats=th.token_loop_long_min_repeats,
                           long_min_span=th.token_loop_long_min_span,
                           max_period=th.loop_max_period,
                           unit_ok=lambda lp, c=chars: any(map(_unspaced,
                                                              c[lp.start:lp.start + lp.period])),
                           long_max_period=th.loop_long_max_period, anchor=th.loop_anchor_ngram)
        if loops:
            lp = loops[0]
            start = x.start + lp.start
            unit = chars[lp.start:lp.start + lp.period]
            return [_issue(text, lexes, "repetition-loop", "degeneration", True, start,
                           start + lp.span, f"{unit!r} repeated {lp.repeats:.0f} times back to "
                           f"back", unit=unit, repeats=round(lp.repeats, 1),
                           period_tokens=lp.period, in_code=False)]
    return []


# 64 or more line breaks with nothing but whitespace between them. Spaces inside a line do
# not count: an aligned markdown table pads its cells with long runs of them.
_WHITESPACE_RUN = re.compile(r"(?:[ \t\r\f\v]*\n){64,}")


def _check_blank(text: str, lexes: Sequence[Lex]) -> list[TextIssue]:
    """Output that shows nothing, or turns into a long run of blank lines: the word-level
    checks see no words there, so without this a generation of 1000 newlines passes."""
    if not text.strip():
        return [TextIssue(kind="blank-output", category="degeneration", strong=True, start=0,
                          end=len(text), word_index=0, quote=text[:40], before="",
                          message=f"the output has no visible character ({len(text)} "
                                  f"characters, all whitespace)" if text else
                                  "the output is empty", data={"chars": len(text)})]
    m = _WHITESPACE_RUN.search(text)
    if m is None:
        return []
    return [_issue(text, lexes, "whitespace-run", "degeneration", True, m.start(), m.end(),
                   f"{m.end() - m.start()} whitespace characters in a row "
                   f"({m.group(0).count(chr(10))} line breaks)", chars=m.end() - m.start())]


def check_token_ids(token_ids: Sequence[int], th: Thresholds = DEFAULT_THRESHOLDS) -> Loop | None:
    """The earliest loop in the output token ids (the server's ground truth for 'where')."""
    loops = find_loops(list(token_ids), min_repeats=th.token_loop_min_repeats,
                       min_span=th.token_loop_min_span,
                       long_min_repeats=th.token_loop_long_min_repeats,
                       long_min_span=th.token_loop_long_min_span, max_period=th.loop_max_period,
                       long_max_period=th.loop_long_max_period, anchor=th.loop_anchor_ngram)
    return loops[0] if loops else None


# ------------------------------------------------------- statistics over prose


def _check_dominant(text: str, lexes: Sequence[Lex], th: Thresholds) -> list[TextIssue]:
    words = [x for x in lexes if x.prose and (x.is_word or x.is_number)]
    if len(words) < th.dominant_min_words:
        return []
    w = min(th.dominant_window, len(words))
    counts: Counter[str] = Counter(x.text for x in words[:w])
    for i in range(len(words) - w + 1):
        if i:
            counts[words[i - 1].text] -= 1
            if not counts[words[i - 1].text]:
                del counts[words[i - 1].text]
            counts[words[i + w - 1].text] += 1
        distinct = len(counts) / w
        if distinct > th.dominant_max_distinct:
            continue
        top = [(c, t) for t, c in counts.items() if not t[0].isdigit()]
        if not top:
            continue
        c, tok = max(top)
        if c / w < th.dominant_share:
            continue
        # Start where the word begins to crowd its neighbours, not at its first
        # (healthy) use in the window.
        win = words[i:i + w]
        first = next((x for k, x in enumerate(win) if x.text == tok
                      and _owns_prefixes(win[k:k + 12], tok)), win[0])
        return [_issue(text, lexes, "dominant-token", "degeneration", True, first.start,
                       words[i + w - 1].end,
                       f"{tok!r} is {c} of {w} words here ({len(counts)} distinct)",
                       token=tok, share=round(c / w, 2), distinct=len(counts), window=w)]
    return []


def _owns_prefixes(words: Sequence[Lex], tok: str) -> bool:
    """``tok`` is at least half of every prefix of ``words`` (from two words on)."""
    hits = 0
    for n, x in enumerate(words, 1):
        hits += x.text == tok
        if n >= 2 and hits * 2 < n:
            return False
    return True


def _check_ngrams(text: str, lexes: Sequence[Lex], th: Thresholds) -> list[TextIssue]:
    """Near-loops: the same phrases cycling with small changes.

    Healthy text repeats phrases too (a changelog's "See the documentation for
    more information" on every entry), but it moves on; a degenerate generation
    keeps cycling to the length limit. So the issue is strong only when the
    repetition persists to the end of the text.
    """
    words = [x for x in lexes if x.prose and (x.is_word or x.is_number)]
    n, w = th.ngram_n, th.ngram_window
    grams = [tuple(x.text for x in words[i:i + n]) for i in range(len(words) - n + 1)]
    if len(grams) < w:
        return []
    shares: list[float] = []
    counts: Counter[tuple[str, ...]] = Counter(grams[:w])
    first_hit: tuple[int, int] | None = None
    for i in range(len(grams) - w + 1):
        if i:
            counts[grams[i - 1]] -= 1
            counts[grams[i + w - 1]] += 1
        share = sum(c for c in counts.values() if c > 1) / w
        shares.append(share)
        if first_hit is None and share >= th.ngram_repeat_share:
            # Start where recurring n-grams take over (7 of the next 10), not at a
            # stray healthy repeat that happens to sit early in the window.
            rep = [counts[grams[j]] > 1 for j in range(i, i + w)]
            k = next((i + j for j in range(w) if rep[j] and sum(rep[j:j + 10]) >= 7),
                     i + rep.index(True))
            first_hit = (i, k)
    if first_hit is None:
        return []
    i, k = first_hit
    tail = shares[i:]
    persistent = min(tail) >= th.ngram_persist_share
    peak = max(tail)
    return [_issue(text, lexes, "repeated-ngrams", "degeneration", persistent,
                   words[k].start, len(text) if persistent else words[i + w - 1 + n - 1].end,
                   f"{peak:.0%} of the word {n}-grams in a {w}-word window recur within it"
                   + (", to the end of the output (a near-loop)" if persistent
                      else " (repetitive, then it moves on)"),
                   share=round(peak, 2), window=w, persistent=persistent)]


def _check_fragments(text: str, lexes: Sequence[Lex], th: Thresholds) -> list[TextIssue]:
    """Runs of clauses made only of function words, the prelude to seed 000's loop."""
    segments: list[list[Lex]] = [[]]
    for x in lexes:
        if not x.prose:
            if segments[-1]:
                segments.append([])
            continue
        if x.is_word or x.is_number:
            segments[-1].append(x)
        elif x.text in {",", ";", "...", "…"}:
            segments.append([])
        elif x.text in {".", "!", "?", ":"}:
            segments.append([])
            segments.append([])  # a sentence end breaks a run of fragments
    run: list[list[Lex]] = []
    for seg in segments:
        ok = (0 < len(seg) <= th.fragment_max_words
              and all(x.text in STOPWORDS for x in seg))
        if ok:
            run.append(seg)
            if len(run) >= th.fragment_run:
                s = run[0][0].start
                frag = [" ".join(x.text for x in r) for r in run]
                return [_issue(text, lexes, "clause-fragments", "degeneration", True, s,
                               run[-1][-1].end,
                               f"{len(run)} clauses in a row with no content word: "
                               + ", ".join(frag), fragments=frag)]
        elif seg or not run:
            run = []
    return []


def _check_punct_density(text: str, lexes: Sequence[Lex], th: Thresholds) -> list[TextIssue]:
    prose = [x for x in lexes if x.prose]
    if not prose:
        return []
    # characters of prose tokens, in order, as (offset, is_punct)
    chars: list[tuple[int, bool]] = []
    for x in prose:
        is_p = x.text in _PROSE_PUNCT or x.text.startswith("..")
        chars.extend((x.start + k, is_p) for k in range(x.end - x.start))
    w = th.punct_window_chars
    if len(chars) < w:
        return []
    p = sum(1 for _, is_p in chars[:w] if is_p)
    best: tuple[float, int] | None = None
    for i in range(len(chars) - w + 1):
        if i:
            p += chars[i + w - 1][1] - chars[i - 1][1]
        share = p / w
        if share >= th.punct_weak_share:
            if best is None or share > best[0]:
                best = (share, i)
            if share >= th.punct_strong_share:
                break
    if best is None:
        return []
    share, i = best
    # Start at the first mark from which the next stretch is punctuation-heavy too,
    # not at the healthy comma that happens to open the window.
    win = chars[i:i + w]
    start = next((off for k, (off, is_p) in enumerate(win) if is_p
                  and sum(q for _, q in win[k:k + 6]) >= 4), None)  # a tight salad
    if start is None:
        probe = 20
        start = next((off for k, (off, is_p) in enumerate(win) if is_p
                      and sum(q for _, q in win[k:k + probe]) >= th.punct_weak_share * probe),
                     win[0][0])
    start = next((x.start for x in prose if x.start <= start < x.end), start)
    strong = share >= th.punct_strong_share
    return [_issue(text, lexes, "punctuation-density", "garble", strong, start,
                   chars[i + w - 1][0] + 1,
                   f"{share:.0%} of the non-space characters here are punctuation",
                   share=round(share, 2))]


def _check_spray(text: str, lexes: Sequence[Lex], th: Thresholds) -> list[TextIssue]:
    run: list[Lex] = []
    for x in lexes:
        if not (x.prose and x.is_word and len(x.text) == 1):
            run = []
            continue
        if run and text[run[-1].end:x.start].isspace():
            run.append(x)
        else:
            run = [x]
        if len(run) >= th.spray_run:
            return [_issue(text, lexes, "char-spray", "garble", True, run[0].start,
                           run[-1].end, f"{len(run)}+ space-separated single letters in a row",
                           run=len(run))]
    return []


def _check_doubled(text: str, lexes: Sequence[Lex], th: Thresholds) -> list[TextIssue]:
    prose_ranges = [(x.start, x.end) for x in lexes if x.prose and x.is_word]
    prose_starts = {s for s, _ in prose_ranges}
    hits = [m for m in _DOUBLED.finditer(text)
            if m.start() in prose_starts and m.group(0).lower() not in DOUBLED_REAL_WORDS]
    if len(hits) < th.doubled_min_count:
        return []
    words = sorted({m.group(0) for m in hits})
    strong = len(hits) >= th.doubled_strong_count
    return [_issue(text, lexes, "doubled-syllable", "garble", strong, hits[0].start(),
                   hits[-1].end(), f"{len(hits)} words with a doubled syllable: "
                   + ", ".join(words[:6]), words=words[:20], count=len(hits))]


# Scripts that legitimately share a word (Japanese mixes kanji and kana).
_SCRIPT_FAMILY = {"HIRAGANA": "CJK", "KATAKANA": "CJK", "CJK": "CJK"}
# Glue that healthy text puts between letters: AT&T, and/or, e.g., co-op, C#.
# Non-ASCII glue that healthy text puts between letters (the ASCII kind -- AT&T,
# and/or, key=value, URLs -- never counts: it is code and addresses, not garble).
_GLUE = set("‘’“”‐‑‒–—·•′″×→←↔⇒≤≥≠≈…«»")


def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    first = name.split(" ", 1)[0]
    return _SCRIPT_FAMILY.get(first, first)


def _check_stray(text: str, lexes: Sequence[Lex], th: Thresholds) -> list[TextIssue]:
    """Symbols wedged inside words ("mov€s") and words that switch script mid-way.

    This is the "stray characters in longer outputs" of seed 000: a wrong
    logit now and then picks a byte-level or foreign-script token inside a word.
    """
    hits: list[tuple[int, int, str]] = []
    prose = [x for x in lexes if x.prose]
    for a, b, c in zip(prose, prose[1:], prose[2:], strict=False):
        if (a.is_word and c.is_word and not b.is_word and not b.is_number
                and a.end == b.start and b.end == c.start and not b.text.isascii()
                and b.text not in _GLUE and b.text != "\ufffd"
                and unicodedata.category(b.text[0])[0] in "SPC"
                # scripts written without spaces glue their punctuation (，。、) to words
                and not (_unspaced(text[a.end - 1]) or _unspaced(text[c.start]))):
            hits.append((a.start, c.end, text[a.start:c.end]))
    for x in prose:
        if x.is_word and len(x.text) >= 2:
            scripts = {_script(ch) for ch in x.text if ch.isalpha()}
            if len(scripts) > 1:
                hits.append((x.start, x.end, text[x.start:x.end]))
    if len(hits) < th.stray_min_count:
        return []
    hits.sort()
    return [_issue(text, lexes, "stray-characters", "garble", len(hits) >= th.stray_strong_count,
                   hits[0][0], hits[-1][1],
                   f"{len(hits)} word(s) with a stray symbol or a change of script inside: "
                   + ", ".join(repr(h[2]) for h in hits[:5]), words=[h[2] for h in hits[:20]],
                   count=len(hits))]


def _check_chars(text: str, lexes: Sequence[Lex]) -> list[TextIssue]:
    issues: list[TextIssue] = []
    # A trailing U+FFFD is a multi-byte character cut by max_new_tokens, not garble.
    body = text.rstrip("\ufffd")
    bad = [i for i, ch in enumerate(body) if ch == "\ufffd"]
    if bad:
        issues.append(_issue(text, lexes, "replacement-char", "garble", True, bad[0], bad[-1] + 1,
                             f"{len(bad)} U+FFFD replacement character(s): invalid UTF-8 "
                             f"from the detokenizer", count=len(bad)))
    ctrl = list(_CONTROL.finditer(text))
    if ctrl:
        issues.append(_issue(text, lexes, "control-char", "garble", True, ctrl[0].start(),
                             ctrl[-1].end(), f"{len(ctrl)} control character(s), e.g. "
                             f"{unicodedata.name(ctrl[0].group(0), repr(ctrl[0].group(0)))}",
                             count=len(ctrl)))
    moji = list(_MOJIBAKE.finditer(text))
    if len(moji) >= 2:
        issues.append(_issue(text, lexes, "mojibake", "garble", len(moji) >= 4, moji[0].start(),
                             moji[-1].end(), f"{len(moji)} mojibake / byte-level BPE "
                             f"sequences (e.g. {moji[0].group(0)!r})", count=len(moji)))
    return issues


# ------------------------------------------------------------------- entry


def check_text(text: str, token_ids: Sequence[int] | None = None,
               thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[TextIssue]:
    """Every degeneration and garble issue in ``text``, earliest first.

    With ``token_ids`` the exact loop detector also runs on the ids, and the
    earliest repetition issue gets the token offset where the id loop starts.
    """
    th = thresholds
    lexes = lex(text)
    issues: list[TextIssue] = _check_blank(text, lexes)
    issues += _check_loops(text, lexes, th)
    if not any(i.kind == "repetition-loop" for i in issues):
        issues += _check_unspaced_loops(text, lexes, th)
    issues += _check_dominant(text, lexes, th)
    issues += _check_ngrams(text, lexes, th)
    issues += _check_fragments(text, lexes, th)
    issues += _check_punct_density(text, lexes, th)
    issues += _check_spray(text, lexes, th)
    issues += _check_doubled(text, lexes, th)
    issues += _check_stray(text, lexes, th)
    issues += _check_chars(text, lexes)
    issues = _snap_to_loop(text, lexes, issues)
    issues.sort(key=lambda t: (t.start, not t.strong, t.kind))
    if token_ids:
        loop = check_token_ids(token_ids, th)
        if loop is not None:
            issues = _attach_token_loop(text, lexes, issues, loop, token_ids)
    return issues


def _snap_to_loop(text: str, lexes: Sequence[Lex], issues: list[TextIssue],
                  slack: int = 40) -> list[TextIssue]:
    """A window statistic only knows roughly where a loop begins; the exact loop knows.

    When a dominant-token issue starts just before an exact loop of that very
    token, report the loop's start (the window had swept in a healthy word or two).
    """
    loop = next((i for i in issues if i.kind == "repetition-loop"), None)
    if loop is None:
        return issues
    unit_words = {x.text for x in lex(loop.data.get("unit", ""))}
    out = []
    for i in issues:
        if (i.kind == "dominant-token" and i.data.get("token") in unit_words
                and 0 < loop.start - i.start <= slack):
            i = replace(i, start=loop.start, word_index=loop.word_index, quote=loop.quote,
                        before=loop.before)
        out.append(i)
    return out


def _attach_token_loop(text: str, lexes: Sequence[Lex], issues: list[TextIssue], loop: Loop,
                       token_ids: Sequence[int]) -> list[TextIssue]:
    data = {"token_unit": list(token_ids[loop.start:loop.start + loop.period][:16]),
            "token_repeats": round(loop.repeats, 1)}
    for k, iss in enumerate(issues):
        if iss.category == "degeneration":
            issues[k] = replace(iss, token_offset=loop.start, data={**iss.data, **data})
            return issues
    # The ids loop but the text does not show it (e.g. whitespace tokens):
    # still a loop; anchor it at the end of the text, the best place we know.
    issues.append(TextIssue(
        kind="token-loop", category="degeneration", strong=True, start=len(text), end=len(text),
        word_index=len(lexes), quote="", before=_before(text, len(text)),
        message=f"output token ids repeat a {loop.period}-token unit {loop.repeats:.0f} times "
                f"from token {loop.start}",
        token_offset=loop.start, data=data))
    return issues


def strongest_first(issues: Iterable[TextIssue]) -> list[TextIssue]:
    """Errors before warnings, then earliest first: the headline issue of an output."""
    return sorted(issues, key=lambda t: (not t.strong, t.start))
