"""Every report on the text corpus, byte for byte: a change that alters any output (a
refactoring that should not, or a rule that should) shows here as a diff to review.

The corpus is the crash texts kept in tests/data (traces, triage formats, peer reports); the
expected reports are tests/data/reports/<folder>/<input>.<format>. After a deliberate change, write
them again with COREANALYZE_UPDATE_SNAPSHOTS=1 and review the diff like code.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.paths import DATA

from coreanalyze import __version__
from coreanalyze.classify import default_rules
from coreanalyze.render import render
from coreanalyze.triage import triage_text

SNAPSHOTS = DATA / "reports"
INPUTS = sorted(
    p
    for folder in ("traces", "triage", "peer")
    for p in (DATA / folder).iterdir()
    if p.is_file() and p.name != "README.md" and not p.name.startswith("LICENSE")
)
FORMATS = {"json": "json", "markdown": "md", "text": "txt", "html": "html"}
UPDATE = os.environ.get("COREANALYZE_UPDATE_SNAPSHOTS") == "1"


def _report(path: Path, fmt: str) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    report = triage_text(text, path.name, rules=default_rules())
    # The tool's own version is in every report; it is not what these snapshots guard.
    return render(report, fmt, color=False).replace(__version__, "<version>")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("path", INPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_report_is_byte_identical_to_its_snapshot(path, fmt):
    expected = SNAPSHOTS / path.parent.name / f"{path.name}.{FORMATS[fmt]}"
    actual = _report(path, fmt)
    if UPDATE:
        expected.parent.mkdir(parents=True, exist_ok=True)
        expected.write_text(actual, encoding="utf-8")
    assert expected.is_file(), f"no snapshot {expected} (write it with COREANALYZE_UPDATE_SNAPSHOTS=1)"
    assert actual == expected.read_text(encoding="utf-8"), f"{expected} differs: review, then update the snapshot"


def test_every_snapshot_has_its_input():
    wanted = {SNAPSHOTS / p.parent.name / f"{p.name}.{ext}" for p in INPUTS for ext in FORMATS.values()}
    stale = sorted(str(p) for p in SNAPSHOTS.rglob("*") if p.is_file() and p not in wanted)
    assert not stale, f"snapshots without an input (remove them): {stale[:5]}"
