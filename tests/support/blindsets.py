"""The blind sets of crash texts (tests/data/blind/*.toml) as test parameters, and their bar."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from coreanalyze.base import tomlfile
from coreanalyze.triage.parse import triage_text

BLIND = Path(__file__).resolve().parent.parent / "data" / "blind"


def load(*names: str) -> list[dict]:
    return [r for name in names for r in tomlfile.loads((BLIND / name).read_text(encoding="utf-8"))["report"]]


def half(source: str) -> str:
    """Which half of a set a report is in, fixed before any verdict was seen: `tune` when the
    SHA-256 of its source URL is even (the rules may be tuned on it), `held-out` when odd."""
    return "tune" if int(hashlib.sha256(source.encode()).hexdigest(), 16) % 2 == 0 else "held-out"


def halves(name: str) -> tuple[list[dict], list[dict]]:
    """(tune, held-out) reports of the blind set `name`, split by `half`."""
    reports = load(name)
    return [r for r in reports if half(r["source"]) == "tune"], [r for r in reports if half(r["source"]) == "held-out"]


def score(reports: list[dict]) -> tuple[int, int, int]:
    """(category right, fault kind right, refused) over reports."""
    from coreanalyze.base.errors import BadInput

    category = kind = refused = 0
    for r in reports:
        try:
            got = triage_text(r["text"], r["source"]).classification
        except BadInput:
            refused += 1
            continue
        category += got.category == r["category"]
        kind += got.fault_kind == r["fault_kind"]
    return category, kind, refused


def params(reports: list[dict], disagreements: dict[str, str]) -> list:
    """One parameter per report; those whose label the rules read otherwise are strict xfails."""
    out = []
    for r in reports:
        marks = [pytest.mark.xfail(reason=disagreements[r["source"]], strict=True)] if r["source"] in disagreements else []
        out.append(pytest.param(r, id=r["source"].removeprefix("https://github.com/"), marks=marks))
    return out


def check_report(report: dict) -> None:
    got = triage_text(report["text"], report["source"]).classification
    assert (got.category, got.fault_kind) == (report["category"], report["fault_kind"]), got.evidence


def check_bar(reports: list[dict], minimum: int, share: float = 0.9) -> None:
    """At least `share` of category and fault kind right, nothing refused."""
    category = kind = 0
    for r in reports:
        got = triage_text(r["text"], r["source"]).classification  # raises on a refusal
        category += got.category == r["category"]
        kind += got.fault_kind == r["fault_kind"]
    assert len(reports) >= minimum
    assert category >= share * len(reports) and kind >= share * len(reports), (category, kind)


def floors(name: str, tune: tuple[int, int, int], held_out: tuple[int, int, int], *, stated: bool = False):
    """A test that the halves of blind set `name` keep their (category right, fault kind right,
    refused) floors: at least as many right, at most as many refused; stated: only the texts that
    state an error."""

    @pytest.mark.parametrize("half_name, floor", [("tune", tune), ("held-out", held_out)], ids=["tune", "held-out"])
    def test(half_name: str, floor: tuple[int, int, int]) -> None:
        reports = [r for r in load(name) if half(r["source"]) == half_name and (r.get("states_error") or not stated)]
        category, kind, refused = score(reports)
        assert category >= floor[0] and kind >= floor[1] and refused <= floor[2], (category, kind, refused)

    return test
