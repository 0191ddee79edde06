"""The prompts ``smoke --endpoint`` sends: a built-in set, or the user's own file.

The built-in set has two halves, each aimed at one blind spot of short smoke
tests (KNOWLEDGE §6). Open questions that invite long answers, because the
verify-path corruption of seed 000 shows only after ~100+ generated tokens;
and one long-context "needle" prompt of several thousand tokens, because
contexts of 512 tokens or less never reach the sparse indexer, so the top-k
path would go untested. The needle haystack is generated, not stored, from a
fixed seed: the same bytes on every machine, so baselines saved on one host
compare token for token on another.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from dsparkctl.errors import UsageError

PromptKind = Literal["open", "needle", "user"]

NEEDLE_SEED = 20260731
NEEDLE_PARAGRAPHS = 28  # ~3,800 words, ~5,000 tokens: far past the 512-token indexer threshold
NEEDLE_DEPTH = 0.62  # where the needle sits in the haystack
NEEDLE_ANSWER = "4-1-7-9-2"


@dataclass(frozen=True)
class Prompt:
    """One prompt; ``expect`` is a string a correct answer must contain (the needle)."""

    id: str
    text: str
    kind: PromptKind = "open"
    expect: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "chars": len(self.text)}
        if self.expect is not None:
            out["expect"] = self.expect
        return out


def builtin_prompts(*, include_needle: bool = True) -> list[Prompt]:
    """The open prompts from ``dsparkctl/data/smoke_prompts.json`` plus the needle prompt."""
    raw = resources.files("dsparkctl").joinpath("data", "smoke_prompts.json").read_text("utf-8")
    data = json.loads(raw)
    out = [Prompt(id=p["id"], text=p["text"], kind="open") for p in data["prompts"]]
    if include_needle:
        out.append(needle_prompt())
    return out


# ------------------------------------------------------------------ the needle

_PLACES = ("the harbour office", "the old mill", "the north granary", "the chapel of St. Brenna",
           "the customs house", "the ropewalk", "the lower market", "the signal station",
           "the tannery yard", "the salt store", "the ferry slip", "the weavers' hall")
_PEOPLE = ("the harbourmaster", "a cooper named Aldous Reeve", "the widow Marren",
           "two apprentices from the boatyard", "the parish clerk", "a carter from Holm",
           "the schoolmistress", "the lamplighter", "a surveyor from the capital",
           "the miller's eldest son", "the assessor", "a visiting botanist")
_THINGS = ("a ledger of grain prices", "a bundle of tide tables", "three sealed letters",
           "a map of the estuary", "an inventory of fishing nets", "a petition about the bridge",
           "a list of ships lost in the winter gales", "a receipt for forty barrels of tar",
           "a sketch of the new breakwater", "a register of births and marriages",
           "a complaint about the price of peat", "notes on the spring fair")
_VERBS = ("recorded", "argued about", "copied out", "mislaid and later found", "inspected",
          "sent to the county town", "read aloud at the meeting", "repaired", "catalogued",
          "questioned")
_WHEN = ("in the spring of 1821", "during the long frost of 1823", "on a wet Tuesday in March",
         "shortly after the fair", "in the autumn when the herring failed",
         "the week the bridge flooded", "at the turn of the year", "before the assizes",
         "in the summer of the great drought", "after the new lighthouse was lit")
_COMMENTS = (
    "Nobody at the time thought the matter important enough to mention twice.",
    "The entry is written in a cramped hand and several words are abbreviated.",
    "A later reader has added a pencil note in the margin, now mostly illegible.",
    "The same week, the price of salt rose by a penny a bushel.",
    "It rained, as the clerk observed, for the ninth day running.",
    "The matter was adjourned until the next quarter day.",
    "Two witnesses signed, one of them with a mark instead of a name.",
    "The page is water-stained along its lower edge.",
)


def _filler_paragraph(rng: random.Random, n: int) -> str:
    sentences = []
    for _ in range(rng.randint(4, 6)):
        sentences.append(
            f"{rng.choice(_WHEN).capitalize()}, {rng.choice(_PEOPLE)} {rng.choice(_VERBS)} "
            f"{rng.choice(_THINGS)} at {rng.choice(_PLACES)}.")
        if rng.random() < 0.6:
            sentences.append(rng.choice(_COMMENTS))
    return f"Entry {n}. " + " ".join(sentences)


def needle_prompt(paragraphs: int = NEEDLE_PARAGRAPHS, depth: float = NEEDLE_DEPTH) -> Prompt:
    """A haystack of archive entries with one fact to retrieve, then a long-answer request."""
    rng = random.Random(NEEDLE_SEED)
    paras = [_filler_paragraph(rng, i + 1) for i in range(paragraphs)]
    needle = (f"Entry {int(paragraphs * depth) + 1}b. Important: the combination of the "
              f"archivist's iron locker in the customs house is {NEEDLE_ANSWER}. "
              f"It was written on a card and kept in the harbourmaster's desk.")
    paras.insert(int(paragraphs * depth) + 1, needle)
    text = (
        "Below are transcribed entries from the archive of a small harbour town.\n\n"
        + "\n\n".join(paras)
        + "\n\nQuestion: according to the entries above, what is the combination of the "
        "archivist's iron locker? State the combination in your first sentence. Then write a "
        "detailed, well-organised summary of the archive (at least 800 words): the people, "
        "the places, the recurring problems of the town, and what the records suggest about "
        "daily life there."
    )
    return Prompt(id="needle", text=text, kind="needle", expect=NEEDLE_ANSWER)


# ------------------------------------------------------------- user prompt files


def load_prompt_file(path: Path) -> list[Prompt]:
    """``--prompts FILE``: JSONL (objects with ``text`` or ``prompt``, optional ``id`` and
    ``expect``; or JSON strings) or plain text, one prompt per line.

    The format is decided by the first non-blank line: ``{`` or ``"`` means
    JSONL, and then every line must parse, so that a half-valid file is an
    error, not a silently shorter prompt set.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"--prompts {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"--prompts {path}: is a directory; give a .jsonl or .txt file") from None
    except OSError as exc:
        raise UsageError(f"--prompts {path}: cannot read it ({exc.strerror or exc})") from None
    try:
        content = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"--prompts {path}: not UTF-8 text (byte {exc.start}); save it as "
                         f"UTF-8, one prompt per line or JSONL") from None
    lines = [(i + 1, ln) for i, ln in enumerate(content.splitlines()) if ln.strip()]
    if not lines:
        raise UsageError(f"--prompts {path}: the file is empty; put one prompt per line "
                         f"(or JSONL objects with a \"text\" field)")
    first = lines[0][1].lstrip()
    prompts: list[Prompt] = []
    if first.startswith(("{", '"')):
        for lineno, ln in lines:
            prompts.append(_jsonl_prompt(path, lineno, ln, len(prompts) + 1))
    else:
        for _, ln in lines:
            prompts.append(Prompt(id=f"user-{len(prompts) + 1}", text=ln.strip(), kind="user"))
    ids = [p.id for p in prompts]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise UsageError(f"--prompts {path}: duplicate prompt id(s) {', '.join(dupes)}; "
                         f"ids must be unique (they key baselines and findings)")
    return prompts


def _jsonl_prompt(path: Path, lineno: int, line: str, n: int) -> Prompt:
    where = f"--prompts {path}:{lineno}"
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise UsageError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}); in a JSONL "
                         f"file every line must be a JSON object or string") from None
    if isinstance(obj, str):
        obj = {"text": obj}
    if not isinstance(obj, dict):
        raise UsageError(f"{where}: expected a JSON object like {{\"text\": \"...\"}}, got "
                         f"{type(obj).__name__}")
    text = obj.get("text", obj.get("prompt"))
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f"{where}: missing a non-empty \"text\" (or \"prompt\") string")
    pid = obj.get("id", f"user-{n}")
    if not isinstance(pid, (str, int)) or isinstance(pid, bool) or not str(pid).strip():
        raise UsageError(f"{where}: \"id\" must be a non-empty string")
    expect = obj.get("expect")
    if expect is not None and not isinstance(expect, str):
        raise UsageError(f"{where}: \"expect\" must be a string (text a correct answer contains)")
    return Prompt(id=str(pid), text=text, kind="user", expect=expect)
