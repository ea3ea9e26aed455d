"""The crashes a watcher reported into a directory since a moment: for pytest's terminal summary
and the notebook's "the kernel died" note."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CaughtCrash:
    pid: int | None
    test: str | None
    verdict: str
    report: Path  # the HTML report
    by: str | None


def crashes_since(out_dir: Path, since: float) -> list[CaughtCrash]:
    found = []
    for path in sorted(out_dir.glob("*.json"), key=lambda p: p.stat().st_mtime):
        try:
            if path.stat().st_mtime < since:
                continue
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        capture = data.get("capture") if isinstance(data, dict) else None
        if not isinstance(capture, dict):
            continue
        found.append(
            CaughtCrash(
                pid=capture.get("pid"),
                test=capture.get("test"),
                verdict=_verdict(data),
                report=path.with_suffix(".html"),
                by=capture.get("by"),
            )
        )
    return found


def _verdict(data: dict) -> str:
    classification = data.get("classification") or {}
    signal = ((data.get("core") or {}).get("signal") or {}).get("name")
    summary = classification.get("summary") or ""
    kind = classification.get("fault_kind") or "unknown"
    category = classification.get("category") or "unknown"
    head = f"{signal} " if signal and not summary.startswith(signal) else ""
    return f"{head}{summary} ({kind}, {category})".strip()
