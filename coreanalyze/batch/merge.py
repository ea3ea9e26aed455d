"""`coreanalyze merge DIR... --out DIR`: one batch from the batches of several machines or shards.

Merging works on the per-core records, not on the summaries' numbers, so a core that two
machines both saw (a copy, a recompressed file) is counted once and first/last seen and hosts
are exact. Reports (and shrunk cores) of the records kept are copied next to them; the summary
and index are rebuilt exactly as a single batch over all the cores would have built them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from coreanalyze.base.atomicfile import write_atomically
from coreanalyze.base.errors import BadInput
from coreanalyze.batch.since import BASELINE_FILE, merge_baselines, read_baseline
from coreanalyze.batch.store import BatchStore, CoreRecord
from coreanalyze.batch.summary import write_outputs
from coreanalyze.known import load_known


@dataclass
class MergeResult:
    out: Path
    sources: int
    records: int
    summary: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _owner_rank(record: CoreRecord) -> tuple:
    # The same rule a single batch follows: a plain file owns its content before any
    # compressed copy of it, then the smaller path.
    return (record.compression is not None, record.path)


def _copy_file(source: BatchStore, target: BatchStore, relative: str | None, warnings: list[str]) -> str | None:
    """A report or shrunk core of a source batch, copied to the same place in the target."""
    if relative is None:
        return None
    src, dst = source.out / relative, target.out / relative
    if src.resolve() == dst.resolve():
        return relative
    try:
        dst.parent.mkdir(exist_ok=True)  # shrunk/ is there only where --shrink was given
        write_atomically(dst, src.read_bytes())
    except OSError as e:
        warnings.append(f"{src}: not copied: {e.strerror or e}")
        return None
    return relative


def _same_directory(a: BatchStore, b: BatchStore) -> bool:
    return a.out.resolve() == b.out.resolve()


def merge_batches(sources: list[str], out: str, known_files: list[str] | tuple[str, ...] = ()) -> MergeResult:
    if not sources:
        raise BadInput("merge needs at least one batch output directory")
    known = load_known(known_files)  # a file that cannot be used: one line, exit 2, before any work
    target = BatchStore(out)
    stores: list[BatchStore] = []
    seen: set[str] = set()
    for source in sources:
        store = BatchStore(source)
        if not store.is_batch_dir():
            raise BadInput(f"{source}: not a batch output directory (no results/ in it)")
        real = os.path.realpath(source)
        if real not in seen:
            seen.add(real)
            stores.append(store)
    target.prepare(resume=True)  # merging into an existing batch adds to it
    if os.path.realpath(out) not in seen:
        stores.insert(0, target)

    result = MergeResult(out=Path(out), sources=len(sources), records=0)
    winners: dict[str, tuple[CoreRecord, BatchStore]] = {}
    others: list[CoreRecord] = []
    duplicates: dict[str, CoreRecord] = {}
    for store in stores:
        for record in store.load(result.warnings):
            if record.status == "duplicate":
                duplicates.setdefault(record.key, record)
                continue
            current = winners.get(record.identity)
            if current is None or _owner_rank(record) < _owner_rank(current[0]):
                if current is not None:
                    others.append(current[0])
                winners[record.identity] = (record, store)
            else:
                others.append(record)

    for record, store in winners.values():
        kept = replace(
            record,
            report_json=_copy_file(store, target, record.report_json, result.warnings),
            report_html=_copy_file(store, target, record.report_html, result.warnings),
            shrunk=_copy_file(store, target, record.shrunk, result.warnings),
        )
        if kept.shrunk is None:
            kept.shrunk_size = None
        if not _same_directory(store, target):
            # Full cores `watch` kept (GBs) stay in the directory that kept them, not copied.
            kept.kept_core = kept.kept_gpu_core = None
        target.write(kept)
    for record in others:
        winner = winners[record.identity][0]
        if winner.path == record.path:
            continue  # the same file seen by two batches
        demoted = replace(record, status="duplicate", duplicate_of=winner.path, report_html=None, report_json=None, reason=None,
                           shrunk=None, shrunk_size=None)
        duplicates.setdefault(demoted.key, demoted)
    for record in duplicates.values():
        if not (target.results / f"{record.key}.json").exists():
            target.write(record)

    # Each batch's --since baseline: the same previous batch counts once, others add up.
    baseline = merge_baselines([b for b in (read_baseline(store.out) for store in stores) if b is not None])
    if baseline is not None:
        target.write_output(BASELINE_FILE, json.dumps(baseline, indent=1, sort_keys=True) + "\n")

    records = target.load(result.warnings)
    result.records = len(records)
    result.summary = write_outputs(target, records, known=known)
    return result



