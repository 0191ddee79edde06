"""Envelope and verdict rules shared by every command."""

from __future__ import annotations

from dsparkctl.findings import SCHEMA_VERSION, Finding, Severity, envelope, verdict_of
from dsparkctl.report import compact_ints

ERR = Finding("a", Severity.ERROR, "t", "f")
WARN = Finding("b", Severity.WARNING, "t", "f")


def test_verdicts() -> None:
    assert verdict_of([]) == "healthy"
    assert verdict_of([WARN]) == "healthy"
    assert verdict_of([WARN, ERR]) == "problems"
    assert verdict_of([WARN], judged=False) == "unknown"
    assert verdict_of([ERR], judged=False) == "problems"


def test_envelope_orders_and_round_trips() -> None:
    doc = envelope("doctor", [WARN, ERR], extra=1)
    assert doc["schema_version"] == SCHEMA_VERSION and doc["verdict"] == "problems"
    assert [f["id"] for f in doc["findings"]] == ["a", "b"]
    assert Finding.from_json(doc["findings"][0]) == ERR
    assert doc["extra"] == 1


def test_compact_ints() -> None:
    assert compact_ints([1, 2, 3, 4, 10, 12, 14]) == "1-4, 10-14/2"
    assert compact_ints([5]) == "5"
    assert compact_ints([6, 12]) == "6, 12"
    assert compact_ints([]) == "-"
