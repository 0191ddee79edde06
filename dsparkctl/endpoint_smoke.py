"""Server-level smoke: long greedy generations against a running SGLang server.

The failure this hunts (seed 000, KNOWLEDGE §1) passes every short test: the
server starts, answers, and only a paragraph into a greedy generation does the
text collapse into fragments and loops. So this sends long (>= 1000 token)
greedy requests with ``ignore_eos`` over prompts that invite long answers plus
a needle prompt long enough to reach the sparse indexer, then

- classifies every output (``textcheck``): degeneration and garble, with the
  offset and a quote of where it starts;
- compares token for token with a spec-off baseline (``--baseline URL`` or a
  saved ``--baseline-file``): greedy speculative decoding is lossless by
  construction, so the first divergence is where to look;
- reads the acceptance length (per-request ``meta_info`` or ``/server_info``)
  against a floor: a wrong verify path rejects good drafts.

Pure pieces (divergence, baseline files, findings) are separate functions so
they are tested directly; ``run_endpoint_smoke`` is the only part doing I/O.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsparkctl.errors import UsageError
from dsparkctl.findings import Finding, Severity
from dsparkctl.prompts import Prompt
from dsparkctl.sglang_client import (
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT_S,
    BadResponse,
    EndpointError,
    Generation,
    SGLangClient,
    avg_spec_accept_length,
)
from dsparkctl.textcheck import TextIssue, check_text, strongest_first

BASELINE_KIND = "dsparkctl-smoke-baseline"
BASELINE_SCHEMA = 1
DEFAULT_MIN_ACCEPT_LENGTH = 2.0
SHORT_OUTPUT_FRACTION = 0.9
DIVERGENCE_CONTEXT = 80

REFS_CORRUPTION = (
    "seed 000 / sglang #33985: greedy DSpark output degenerates after ~100 tokens on SM120 "
    "with FlashInfer 0.6.18; spec-off clean",
    "sglang #33986 (withdrawn): padding topk to an instantiated width -> stray characters",
    "sglang #33800: DSpark depth 5 + TP4 + DP attention corrupts ~1% of requests (PR #34021)",
)

FIX_CORRUPTION = (
    "Greedy speculative decoding is lossless, so this output should match a spec-off run. "
    "1) Confirm: launch the same model without --speculative-algorithm and rerun with "
    "`--baseline URL` (or save one with --save-baseline and compare with --baseline-file); "
    "if spec-off is clean the target-verify forward is computing wrong logits. "
    "2) The known suspect is the verify-sized (num_tokens = bs*(gamma+1) <= 64) calls of "
    "FlashInfer's SM120 sparse-MLA decode kernel (FlashInfer 0.6.18+): route the stack to "
    "dsparkctl's reference-checked kernels with `dsparkctl install-kernels --route all`, and "
    "on the GPU host run `dsparkctl smoke --kernel both --long` to see which kernel disagrees "
    "with the reference. 3) With DP attention + TP4 and DSpark depth 5, sglang #33800 "
    "corrupts ~1% of requests (fix pending in PR #34021): try without --enable-dp-attention. "
    "Do not use the pad-the-index workaround from sglang #33986 (withdrawn: intermittent "
    "stray characters)."
)

FIX_ACCEPT = (
    "Low acceptance means the target rejects most draft tokens. Either the verify path "
    "computes wrong logits (same suspects as corrupted output: FlashInfer's SM120 decode "
    "kernel at verify sizes -> `dsparkctl install-kernels --route all`, then "
    "`dsparkctl smoke --kernel both`), or the draft does not match the target: check that "
    "--speculative-dspark-block-size matches the checkpoint's dspark_block_size (5 for "
    "DeepSeek-V4-Flash-0731) and that the draft weights belong to this checkpoint. Healthy "
    "DSpark at gamma 5 accepts ~4.1 tokens per verify (seed 000); SGLang's own CI floor is 3.0."
)

FIX_UNREACHABLE = (
    "Check that the server is up (`curl URL/health` should answer 200), that host and port "
    "match --host/--port of `sglang serve` (default port 30000), and that no firewall is in "
    "the way. A server still loading weights or capturing CUDA graphs answers 503 or not at "
    "all; wait for 'The server is fired up and ready to roll!' in its log."
)

FIX_BAD_RESPONSE = (
    "The address answers, but not like SGLang's native API. Point --endpoint at the SGLang "
    "HTTP server itself (not a gateway that only speaks /v1/chat/completions), and read the "
    "server log for the request."
)


# ------------------------------------------------------------------ results


@dataclass(frozen=True)
class Divergence:
    """Where an output first departs from the baseline's."""

    token_index: int | None  # first differing output token (None without ids on both sides)
    char_index: int | None  # first differing character (None if the texts agree)
    before: str
    ours: str
    theirs: str
    basis: str  # "token_ids" or "text"

    def to_json(self) -> dict[str, Any]:
        return {"token_index": self.token_index, "char_index": self.char_index,
                "before": self.before, "ours": self.ours, "theirs": self.theirs,
                "basis": self.basis}


@dataclass
class PromptRun:
    """One prompt's generation, or why there is none, and what the checks found."""

    prompt: Prompt
    generation: Generation | None = None
    error: EndpointError | None = None
    issues: list[TextIssue] = field(default_factory=list)
    divergence: Divergence | None = None
    compared: bool = False

    @property
    def ok(self) -> bool:
        return self.generation is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.prompt.id, "kind": self.prompt.kind,
                               "ok": self.ok}
        g = self.generation
        if g is not None:
            toks = g.completion_tokens
            out.update({
                "completion_tokens": toks,
                "finish_reason": g.finish_reason,
                "elapsed_s": round(g.elapsed_s, 3),
                "tokens_per_s": round(toks / g.elapsed_s, 1) if toks and g.elapsed_s > 0
                else None,
                "spec_accept_length": g.spec_accept_length,
                "spec_accept_rate": g.spec_accept_rate,
                "spec_verify_ct": g.spec_verify_ct,
                "attempts": g.attempts,
            })
        if self.error is not None:
            out["error"] = {"kind": self.error.kind, "message": str(self.error)}
        out["issues"] = [i.to_json() for i in self.issues]
        if self.compared:
            out["divergence"] = self.divergence.to_json() if self.divergence else None
        return out


@dataclass
class EndpointSmokeOptions:
    endpoint: str
    prompts: Sequence[Prompt]
    max_new_tokens: int
    concurrency: int = 4
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    min_accept_length: float | None = DEFAULT_MIN_ACCEPT_LENGTH
    baseline_url: str | None = None
    baseline_file: Path | None = None
    save_baseline: Path | None = None
    strict_baseline: bool = False
    api_key: str | None = field(default=None, repr=False)
    show_progress: bool = False


@dataclass
class EndpointSmokeResult:
    findings: list[Finding]
    judged: bool
    section: dict[str, Any]
    runs: list[PromptRun]


# ------------------------------------------------------- pure: divergence


def first_divergence(ours_text: str, theirs_text: str,
                     ours_ids: Sequence[int] | None = None,
                     theirs_ids: Sequence[int] | None = None,
                     context: int = DIVERGENCE_CONTEXT) -> Divergence | None:
    """The first place two greedy outputs differ, or None if one is a prefix of the other.

    Outputs of different lengths (a baseline saved with another
    ``--max-new-tokens``) are compared over their common prefix only: a
    shorter answer is not a divergence. Token ids decide when both sides have
    them; the text position still gives the human-readable context.
    """
    tok: int | None = None
    basis = "text"
    if ours_ids is not None and theirs_ids is not None:
        basis = "token_ids"
        n = min(len(ours_ids), len(theirs_ids))
        tok = next((i for i in range(n) if ours_ids[i] != theirs_ids[i]), None)
        if tok is None:
            return None
    n = min(len(ours_text), len(theirs_text))
    ch = next((i for i in range(n) if ours_text[i] != theirs_text[i]), None)
    if ch is None and tok is None:
        return None
    if ch is None:
        # ids differ but the text (as far as both go) does not: e.g. a different
        # tokenization of the same characters. Show the end of the shorter text.
        ch_ctx = n
        return Divergence(tok, None, _tail(ours_text[:ch_ctx], context),
                          ours_text[ch_ctx:ch_ctx + context], theirs_text[ch_ctx:ch_ctx + context],
                          basis)
    return Divergence(tok, ch, _tail(ours_text[:ch], context), ours_text[ch:ch + context],
                      theirs_text[ch:ch + context], basis)


def _tail(s: str, n: int) -> str:
    return s if len(s) <= n else "…" + s[-(n - 1):]


# ---------------------------------------------------- pure: baseline files


def prompt_digest(p: Prompt) -> str:
    return hashlib.sha256(p.text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class BaselineEntry:
    prompt_sha256: str
    text: str
    output_ids: tuple[int, ...] | None


@dataclass(frozen=True)
class Baseline:
    source: str
    max_new_tokens: int | None
    entries: dict[str, BaselineEntry]


def baseline_to_json(runs: Sequence[PromptRun], *, endpoint: str,
                     max_new_tokens: int) -> dict[str, Any]:
    outputs: dict[str, Any] = {}
    for r in runs:
        g = r.generation
        if g is None:
            continue
        outputs[r.prompt.id] = {
            "prompt_sha256": prompt_digest(r.prompt),
            "text": g.text,
            "output_ids": list(g.output_ids) if g.output_ids is not None else None,
            "completion_tokens": g.completion_tokens,
            "meta_info": {k: g.meta_info[k] for k in ("finish_reason", "completion_tokens",
                                                      "spec_accept_length", "spec_verify_ct")
                          if k in g.meta_info},
        }
    return {
        "kind": BASELINE_KIND,
        "schema_version": BASELINE_SCHEMA,
        "endpoint": endpoint,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "max_new_tokens": max_new_tokens,
        "sampling_params": {"temperature": 0.0, "ignore_eos": True},
        "outputs": outputs,
    }


def write_baseline(path: Path, doc: dict[str, Any]) -> None:
    """Atomic: a crash or a full disk never leaves half a baseline behind."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"--save-baseline {path}: folder {parent} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, ensure_ascii=False, indent=1)
            fh.write("\n")
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise UsageError(f"--save-baseline {path}: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def parse_baseline(doc: Any, source: str) -> Baseline:
    """Validate a saved baseline; anything off is a UsageError naming the problem."""
    where = f"--baseline-file {source}"
    if not isinstance(doc, dict) or doc.get("kind") != BASELINE_KIND:
        raise UsageError(f"{where}: not a dsparkctl smoke baseline (expected \"kind\": "
                         f"\"{BASELINE_KIND}\"); write one with `dsparkctl smoke --endpoint URL "
                         f"--save-baseline FILE` against a spec-off server")
    if doc.get("schema_version") != BASELINE_SCHEMA:
        raise UsageError(f"{where}: baseline schema_version {doc.get('schema_version')!r} is "
                         f"not {BASELINE_SCHEMA}; save it again with this dsparkctl")
    outputs = doc.get("outputs")
    if not isinstance(outputs, dict):
        raise UsageError(f"{where}: \"outputs\" must be an object keyed by prompt id")
    entries: dict[str, BaselineEntry] = {}
    for pid, o in outputs.items():
        if not isinstance(o, dict) or not isinstance(o.get("text"), str) or not isinstance(
                o.get("prompt_sha256"), str):
            raise UsageError(f"{where}: output {pid!r} needs string \"text\" and "
                             f"\"prompt_sha256\"")
        ids = o.get("output_ids")
        if ids is not None and (not isinstance(ids, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in ids)):
            raise UsageError(f"{where}: output {pid!r}: \"output_ids\" must be a list of "
                             f"integers or null")
        entries[str(pid)] = BaselineEntry(o["prompt_sha256"], o["text"],
                                          tuple(ids) if ids is not None else None)
    mnt = doc.get("max_new_tokens")
    return Baseline(source=str(doc.get("endpoint") or source),
                    max_new_tokens=mnt if isinstance(mnt, int) else None, entries=entries)


def load_baseline(path: Path) -> Baseline:
    try:
        raw = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"--baseline-file {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--baseline-file {path}: cannot read it ({exc})") from None
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise UsageError(f"--baseline-file {path}: not JSON ({exc})") from None
    return parse_baseline(doc, str(path))


def baseline_from_runs(runs: Sequence[PromptRun], source: str,
                       max_new_tokens: int) -> Baseline:
    return Baseline(source, max_new_tokens, {
        r.prompt.id: BaselineEntry(prompt_digest(r.prompt), r.generation.text,
                                   r.generation.output_ids)
        for r in runs if r.generation is not None})


def compare_to_baseline(runs: Sequence[PromptRun], baseline: Baseline) -> list[str]:
    """Fill ``divergence`` on every run the baseline covers; return notes on what was skipped."""
    notes: list[str] = []
    for r in runs:
        if r.generation is None:
            continue
        e = baseline.entries.get(r.prompt.id)
        if e is None:
            notes.append(f"{r.prompt.id}: not in the baseline")
            continue
        if e.prompt_sha256 != prompt_digest(r.prompt):
            notes.append(f"{r.prompt.id}: the baseline was made from a different prompt text")
            continue
        r.compared = True
        r.divergence = first_divergence(r.generation.text, e.text, r.generation.output_ids,
                                        e.output_ids)
    return notes


# -------------------------------------------------------- pure: findings


def classify_runs(runs: Sequence[PromptRun]) -> None:
    for r in runs:
        if r.generation is not None:
            r.issues = check_text(r.generation.text, r.generation.output_ids)


def _where(i: TextIssue) -> str:
    tok = f", output token {i.token_offset}" if i.token_offset is not None else ""
    return f"char {i.start} (word {i.word_index}{tok})"


def issue_findings(r: PromptRun) -> list[Finding]:
    """One finding per category per prompt, headlined by its strongest, earliest issue."""
    out: list[Finding] = []
    for category, fid, label in (("degeneration", "smoke-degeneration", "degenerates"),
                                 ("garble", "smoke-garble", "is garbled")):
        issues = [i for i in r.issues if i.category == category]
        if not issues:
            continue
        head = strongest_first(issues)[0]
        first = min(issues, key=lambda i: i.start)
        sev = Severity.ERROR if head.strong else Severity.WARNING
        lines = [f"{head.kind} at {_where(head)}: {head.message}",
                 f"  after: \"{head.before}\"", f"  quote: \"{head.quote}\""]
        if first is not head:
            lines.append(f"earliest sign, {first.kind} at {_where(first)}: \"{first.quote}\"")
        others = sorted({i.kind for i in issues} - {head.kind, first.kind})
        if others:
            lines.append("also: " + ", ".join(others))
        out.append(Finding(
            id=fid, severity=sev,
            title=f"prompt {r.prompt.id}: output {label} from char {first.start} "
                  f"({head.kind}{'' if head.strong else ', weak evidence'})",
            detail="\n".join(lines), fix=FIX_CORRUPTION, refs=REFS_CORRUPTION,
            data={"prompt": r.prompt.id, "char_offset": first.start,
                  "token_offset": head.token_offset, "quote": first.quote,
                  "issues": [i.to_json() for i in issues]}))
    return out


def divergence_finding(r: PromptRun, baseline_source: str, strict: bool) -> Finding | None:
    d = r.divergence
    if d is None:
        return None
    at = (f"output token {d.token_index}" if d.token_index is not None
          else f"char {d.char_index}")
    degenerate_after = any(i.strong and i.category == "degeneration" for i in r.issues)
    sev = Severity.ERROR if (strict or degenerate_after) else Severity.WARNING
    why = ("the output also degenerates" if degenerate_after and not strict else
           "--strict-baseline" if strict else
           "greedy outputs can part at a near-tie when the batch shapes differ; treat it as "
           "an error if it recurs at the same place or precedes garbage")
    return Finding(
        id="smoke-divergence", severity=sev,
        title=f"prompt {r.prompt.id}: differs from the baseline at {at}",
        detail=(f"baseline: {baseline_source} (compared by {d.basis})\n"
                f"  context:  \"{d.before}\"\n  this:     \"{d.ours}\"\n"
                f"  baseline: \"{d.theirs}\"\n({why})"),
        fix=FIX_CORRUPTION, refs=REFS_CORRUPTION,
        data={"prompt": r.prompt.id, **d.to_json()})


def accept_length_of(runs: Sequence[PromptRun]) -> float | None:
    """Tokens per verify over all requests: sum(completion_tokens) / sum(spec_verify_ct)."""
    toks = verifies = 0
    for r in runs:
        g = r.generation
        if g is None or not g.spec_verify_ct or not g.completion_tokens:
            continue
        toks += g.completion_tokens
        verifies += g.spec_verify_ct
    return toks / verifies if verifies else None


def accept_findings(value: float | None, source: str | None,
                    floor: float | None) -> list[Finding]:
    if value is None:
        return [Finding(
            id="smoke-no-spec-metrics", severity=Severity.INFO,
            title="no speculative-decoding metrics from this server; acceptance not checked",
            detail="neither meta_info.spec_verify_ct nor /server_info internal_states"
                   "[*].avg_spec_accept_length was reported (a spec-off server, or an SGLang "
                   "that does not publish them)")]
    if floor is not None and value < floor:
        return [Finding(
            id="smoke-accept-length-low", severity=Severity.ERROR,
            title=f"acceptance length {value:.2f} is below the floor {floor:g}",
            detail=f"measured from {source}", fix=FIX_ACCEPT,
            refs=("seed 000: healthy DSpark gamma 5 accepts 4.10 (rate 0.62)",
                  "KNOWLEDGE §6: SGLang DSpark CI requires accept length >= 3.0"),
            data={"accept_length": value, "floor": floor, "source": source})]
    return []


def error_findings(runs: Sequence[PromptRun], url: str) -> tuple[list[Finding], bool]:
    """Failed requests. All failed with server errors (5xx): broken (error). All failed
    otherwise: no verdict (exit 2). Some failed: the server is flaky (error)."""
    failed = [r for r in runs if r.error is not None]
    if not failed:
        return [], True
    if len(failed) == len(runs) and all(r.error is not None and (r.error.status or 0) >= 500
                                        for r in failed):
        # It answers HTTP (health included) and fails every generation with a server error:
        # that is a verdict (broken), not a server we could not reach.
        return [Finding(
            id="smoke-generate-failing", severity=Severity.ERROR,
            title=f"every generation failed on {url} with a server error "
                  f"(HTTP {', '.join(sorted({str(r.error.status) for r in failed if r.error}))})",
            detail="\n".join(f"{r.prompt.id}: {r.error}" for r in failed[:8]),
            fix="Read the server's log around these requests (a CUDA error, an OOM, a crashed "
                "scheduler); `dsparkctl smoke --kernel both` on the GPU host checks the "
                "attention kernels.",
            data={"failed": [r.prompt.id for r in failed]})], True
    if len(failed) == len(runs):
        kinds = sorted({r.error.kind for r in failed if r.error})
        first = failed[0].error
        fid = {"unreachable": "smoke-endpoint-unreachable",
               "timeout": "smoke-endpoint-timeout"}.get(first.kind if first else "",
                                                        "smoke-endpoint-bad-response")
        return [Finding(
            id=fid, severity=Severity.WARNING,
            title=f"no generation succeeded on {url} ({', '.join(kinds)}); no verdict",
            detail="\n".join(f"{r.prompt.id}: {r.error}" for r in failed[:8]),
            fix=FIX_UNREACHABLE if fid != "smoke-endpoint-bad-response" else FIX_BAD_RESPONSE,
            data={"failed": [r.prompt.id for r in failed]})], False
    return [Finding(
        id="smoke-request-failed", severity=Severity.ERROR,
        title=f"prompt {r.prompt.id}: request failed ({r.error.kind if r.error else '?'}) "
              f"while others succeeded",
        detail=str(r.error),
        fix="A server that answers some requests and fails others is not healthy: read its log "
            "around this request (OOM, a CUDA error, a crashed scheduler, a watchdog timeout).",
        data={"prompt": r.prompt.id}) for r in failed], True


def output_findings(runs: Sequence[PromptRun], max_new_tokens: int) -> list[Finding]:
    out: list[Finding] = []
    for r in runs:
        g = r.generation
        if g is None:
            continue
        out.extend(issue_findings(r))
        toks = g.completion_tokens
        if toks is not None and toks < SHORT_OUTPUT_FRACTION * max_new_tokens:
            out.append(Finding(
                id="smoke-short-output", severity=Severity.WARNING,
                title=f"prompt {r.prompt.id}: generated {toks} of {max_new_tokens} tokens "
                      f"(finish_reason {g.finish_reason})",
                detail="ignore_eos was set, so the generation should run to max_new_tokens; "
                       "a shorter one did not exercise the long-generation path fully",
                fix="Check the server's --context-length and max_total_tokens: a prompt plus "
                    "max_new_tokens beyond them gets truncated. Lower --max-new-tokens or "
                    "raise the limits.",
                data={"prompt": r.prompt.id, "completion_tokens": toks}))
        if r.prompt.expect and r.prompt.expect not in g.text:
            out.append(Finding(
                id="smoke-needle-missed", severity=Severity.WARNING,
                title=f"prompt {r.prompt.id}: answer does not contain {r.prompt.expect!r}",
                detail=f"long-context retrieval failed; answer starts: "
                       f"\"{' '.join(g.text[:160].split())}\"",
                fix="Compare with a spec-off server (--baseline URL). If that one retrieves "
                    "it, the sparse-attention path (indexer top-k, c4/c128 extra cache) is "
                    "suspect: run `dsparkctl smoke --kernel both --long` on the GPU host.",
                data={"prompt": r.prompt.id}))
    return out


# ------------------------------------------------------------------ I/O


def run_prompts(client: SGLangClient, prompts: Sequence[Prompt], *, max_new_tokens: int,
                concurrency: int, on_done: Callable[[PromptRun], None] | None = None
                ) -> list[PromptRun]:
    """Generate for every prompt with at most ``concurrency`` requests in flight.

    Every request is bounded by the client's timeout and retries, so the whole
    loop is bounded too. Results come back in prompt order.
    """
    runs = [PromptRun(p) for p in prompts]
    lock = threading.Lock()

    def one(r: PromptRun) -> PromptRun:
        try:
            r.generation = client.generate(r.prompt.text, max_new_tokens=max_new_tokens)
        except EndpointError as exc:
            r.error = exc
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError,
                RecursionError) as exc:  # an answer of a shape no SGLang sends
            r.error = BadResponse(f"{client.url}/generate: the answer could not be read "
                                  f"({type(exc).__name__}: {exc})", url=f"{client.url}/generate")
        return r

    pool = ThreadPoolExecutor(max_workers=max(1, concurrency),
                              thread_name_prefix="dsparkctl-smoke")
    try:
        futures = [pool.submit(one, r) for r in runs]
        for fut in as_completed(futures):
            done = fut.result()
            if on_done is not None:
                with lock:
                    on_done(done)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return runs


def _progress(show: bool) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dsparkctl.output import err_console

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=err_console, transient=True,
                    disable=not show)


def run_endpoint_smoke(opts: EndpointSmokeOptions) -> EndpointSmokeResult:
    if opts.concurrency < 1:
        raise UsageError(f"--concurrency must be >= 1, got {opts.concurrency}")
    if opts.max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens must be >= 1, got {opts.max_new_tokens}")
    if not opts.prompts:
        raise UsageError("no prompts to send")
    baseline: Baseline | None = load_baseline(opts.baseline_file) if opts.baseline_file else None
    client = SGLangClient(opts.endpoint, timeout_s=opts.timeout_s, retries=opts.retries,
                          api_key=opts.api_key)
    base_client = (SGLangClient(opts.baseline_url, timeout_s=opts.timeout_s,
                                retries=opts.retries, api_key=opts.api_key)
                   if opts.baseline_url else None)
    section: dict[str, Any] = {
        "url": client.url, "max_new_tokens": opts.max_new_tokens,
        "concurrency": opts.concurrency, "timeout_s": opts.timeout_s,
    }
    findings: list[Finding] = []

    try:
        client.health()
    except EndpointError as exc:
        if exc.status != 404:  # a server without /health can still generate
            fid = ("smoke-endpoint-unreachable" if exc.kind in ("unreachable", "timeout")
                   else "smoke-endpoint-bad-response")
            findings.append(Finding(
                id=fid, severity=Severity.WARNING,
                title=f"cannot use {client.url}: {exc.kind}; server-level checks not run",
                detail=str(exc),
                fix=FIX_UNREACHABLE if fid == "smoke-endpoint-unreachable" else FIX_BAD_RESPONSE))
            section["error"] = {"kind": exc.kind, "message": str(exc)}
            return EndpointSmokeResult(findings, False, section, [])

    with _progress(opts.show_progress) as progress:
        task = progress.add_task(f"generating ({opts.max_new_tokens} tokens each)",
                                 total=len(opts.prompts))
        runs = run_prompts(client, opts.prompts, max_new_tokens=opts.max_new_tokens,
                           concurrency=opts.concurrency,
                           on_done=lambda _r: progress.advance(task))
        base_runs: list[PromptRun] = []
        if base_client is not None:
            btask = progress.add_task("baseline", total=len(opts.prompts))
            base_runs = run_prompts(base_client, opts.prompts,
                                    max_new_tokens=opts.max_new_tokens,
                                    concurrency=opts.concurrency,
                                    on_done=lambda _r: progress.advance(btask))

    classify_runs(runs)
    errs, judged = error_findings(runs, client.url)
    findings += errs
    findings += output_findings(runs, opts.max_new_tokens)

    # baseline comparison
    if base_client is not None:
        failed = [r for r in base_runs if r.error is not None]
        if failed:
            findings.append(Finding(
                id="smoke-baseline-unavailable", severity=Severity.WARNING,
                title=f"baseline {base_client.url}: {len(failed)} of {len(base_runs)} "
                      f"generations failed; those prompts were not compared",
                detail="\n".join(f"{r.prompt.id}: {r.error}" for r in failed[:8]),
                fix=FIX_UNREACHABLE))
            if len(failed) == len(base_runs):
                judged = False
        baseline = baseline_from_runs(base_runs, base_client.url, opts.max_new_tokens)
    if baseline is not None:
        notes = compare_to_baseline(runs, baseline)
        for r in runs:
            f = divergence_finding(r, baseline.source, opts.strict_baseline)
            if f is not None:
                findings.append(f)
        compared = [r for r in runs if r.compared]
        section["baseline"] = {
            "source": baseline.source, "max_new_tokens": baseline.max_new_tokens,
            "compared": len(compared),
            "diverged": sum(1 for r in compared if r.divergence is not None),
            "notes": notes,
        }
        if notes:
            findings.append(Finding(
                id="smoke-baseline-partial", severity=Severity.INFO,
                title=f"{len(notes)} prompt(s) not compared with the baseline",
                detail="\n".join(notes)))

    # acceptance length
    accept = accept_length_of(runs)
    source = "meta_info (sum completion_tokens / sum spec_verify_ct)" if accept else None
    info_value: float | None = None
    if any(r.ok for r in runs):
        try:
            info_value = avg_spec_accept_length(client.server_info())
        except EndpointError as exc:
            section["server_info_error"] = str(exc)
    if accept is None and info_value is not None:
        accept, source = info_value, "/server_info internal_states[*].avg_spec_accept_length"
    section["accept_length"] = {"value": accept, "source": source,
                                "server_info_avg": info_value, "floor": opts.min_accept_length}
    if any(r.ok for r in runs):
        findings += accept_findings(accept, source, opts.min_accept_length)

    if opts.save_baseline is not None:
        ok = [r for r in runs if r.ok]
        if ok:
            write_baseline(opts.save_baseline, baseline_to_json(
                runs, endpoint=client.url, max_new_tokens=opts.max_new_tokens))
            section["saved_baseline"] = {"path": str(opts.save_baseline), "outputs": len(ok)}
            if len(ok) < len(runs):
                findings.append(Finding(
                    id="smoke-baseline-partial", severity=Severity.INFO,
                    title=f"saved baseline holds {len(ok)} of {len(runs)} prompts "
                          f"(the others failed)"))
        else:
            findings.append(Finding(
                id="smoke-baseline-not-saved", severity=Severity.WARNING,
                title=f"nothing to save in {opts.save_baseline}: every generation failed"))

    section["results"] = [r.to_json() for r in runs]
    return EndpointSmokeResult(findings, judged, section, runs)
