"""What `coreanalyze batch` and `merge` print when they finish: counts, top groups, failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from coreanalyze.batch.merge import MergeResult
from coreanalyze.batch.runner import BatchResult
from coreanalyze.batch.store import SHRUNK_DIR
from coreanalyze.batch.summary import INDEX_FILE
from coreanalyze.render.view import one_line

TOP_GROUPS = 10
LISTED_FAILURES = 10


def _summary_lines(summary: dict[str, Any], out: Path) -> Iterator[str]:
    t = summary.get("totals", {})
    yield (
        f"{t.get('cores', 0)} cores: {t.get('analyzed', 0)} analyzed, {t.get('partial', 0)} partly, "
        f"{t.get('failed', 0)} failed, {t.get('duplicates', 0)} duplicate files; {t.get('groups', 0)} crash groups"
    )
    jobs = summary.get("jobs") or []
    if jobs:
        yield f"{len(jobs)} jobs of several processes ({sum(j['cores'] for j in jobs)} cores), each counted once under its root cause"
        for j in jobs[:TOP_GROUPS]:
            yield f"  job {one_line(j['id'], 60)}: {one_line(j['summary'], 200)}"
    if t.get("without_time"):
        yield f"{t['without_time']} cores without a plausible crash time (file time before 2000 or far ahead): left out of the days and trends"
    since = summary.get("since")
    if since:
        yield (
            f"since the previous batch: {since['new']} new, {since['growing']} growing, {since['back']} back, "
            f"{since['steady']} steady, {since['gone']} gone"
        )
    for g in summary.get("groups", [])[:TOP_GROUPS]:
        marks = [g["trend"]["state"]] if g.get("trend") and g["trend"]["state"] != "steady" else []
        marks += ["known: " + one_line(g["known"]["id"], 60)] if g.get("known") else []
        tail = f"  [{', '.join(marks)}]" if marks else ""
        yield f"  {g['count']:>5}  {g['fault_kind']:<19} {g['category']:<22} {one_line(g['signature'], 120)}{tail}"
    if len(summary.get("groups", [])) > TOP_GROUPS:
        yield f"  ... {len(summary['groups']) - TOP_GROUPS} more groups"
    failed = summary.get("failed", [])
    for f in failed[:LISTED_FAILURES]:
        yield f"  failed: {one_line(f['path'], 200)}: {one_line(f['reason'], 200)}"
    if len(failed) > LISTED_FAILURES:
        yield f"  ... {len(failed) - LISTED_FAILURES} more failures in summary.json"
    yield f"index: {out / INDEX_FILE}"


def batch_outcome_lines(result: BatchResult) -> Iterator[str]:
    skipped = f", {result.skipped} already done" if result.skipped else ""
    yield f"{result.found} core files found{skipped}"
    if result.shrunk:
        yield f"{result.shrunk} crash groups' example cores shrunk to attach, in {result.out / SHRUNK_DIR}"
    yield from _summary_lines(result.summary, result.out)


def merge_outcome_lines(result: MergeResult) -> Iterator[str]:
    yield f"merged {result.sources} batch directories: {result.records} core records"
    yield from _summary_lines(result.summary, result.out)
