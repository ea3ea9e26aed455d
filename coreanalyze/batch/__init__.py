"""Many cores at once: find them, analyze them in worker processes, group them by signature.

    inputs    which files, systemd-coredump names and attributes, decompression
    identity  content identity of a core (resume, duplicates, shards)
    worker    one worker process: one core -> reports + a record
    runner    the batch: scheduling, claims, timeouts, Ctrl-C
    shrinking --shrink: each crash group's example core shrunk to attach
    store     the output directory: atomic per-core records and reports
    summary   crash groups -> summary.json, index.html, cores.jsonl
    outcome   the lines `batch` and `merge` print when they finish
    progress  the progress bar on a terminal
    shard     --shard I/N
    merge     several batch directories -> one
"""

from typing import Any

# Imported on first use: `coreanalyze CORE` and `triage` read known/facts.py (what the known-crash
# database matches on) and must not pay for the runner's imports (multiprocessing, the workers).
_WHERE = {
    "BatchOptions": "runner",
    "BatchResult": "runner",
    "default_jobs": "runner",
    "run_batch": "runner",
    "MergeResult": "merge",
    "merge_batches": "merge",
    "Shard": "shard",
    "parse_shard": "shard",
}

__all__ = [
    "BatchOptions",
    "BatchResult",
    "MergeResult",
    "Shard",
    "default_jobs",
    "merge_batches",
    "parse_shard",
    "run_batch",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"coreanalyze.batch.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
