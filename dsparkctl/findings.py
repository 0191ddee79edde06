"""Findings and the report envelope shared by every command.

Every command (doctor, smoke, patches, report merge) speaks the same JSON
envelope so that scripts and the cluster merger can treat them alike:
``schema_version``, ``command``, ``verdict`` and ``findings``. The verdict maps
one-to-one to the exit code (0 healthy, 1 problems, 2 unknown).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

SCHEMA_VERSION = 1

Verdict = Literal["healthy", "problems", "unknown"]
EXIT_CODES: dict[str, int] = {"healthy": 0, "problems": 1, "unknown": 2}


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@dataclass(frozen=True)
class Finding:
    """One thing the tool wants the operator to know, with the exact fix."""

    id: str
    severity: Severity
    title: str
    fix: str = ""
    refs: tuple[str, ...] = ()
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "severity": self.severity.value,
            "title": self.title,
            "fix": self.fix,
            "refs": list(self.refs),
        }
        if self.detail:
            out["detail"] = self.detail
        if self.data:
            out["data"] = self.data
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Finding:
        return cls(
            id=str(obj["id"]),
            severity=Severity(obj["severity"]),
            title=str(obj.get("title", "")),
            fix=str(obj.get("fix", "")),
            refs=tuple(obj.get("refs", ())),
            detail=str(obj.get("detail", "")),
            data=dict(obj.get("data", {})),
        )


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.severity.rank, f.id))


def verdict_of(findings: Iterable[Finding], *, judged: bool = True) -> Verdict:
    """Errors make a verdict even when part of the picture is missing.

    ``judged`` is False when the main question could not be answered (for
    doctor: no FlashInfer to judge and no ``--flashinfer-version``); then the
    verdict is ``unknown`` unless an error was found anyway.
    """
    if any(f.severity is Severity.ERROR for f in findings):
        return "problems"
    return "healthy" if judged else "unknown"


def envelope(command: str, findings: Iterable[Finding], *, judged: bool = True,
             **sections: Any) -> dict[str, Any]:
    fs = sort_findings(findings)
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "verdict": verdict_of(fs, judged=judged),
    }
    out.update(sections)
    out["findings"] = [f.to_json() for f in fs]
    return out
