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

from coreanalyze.batch.merge import MergeResult, merge_batches
from coreanalyze.batch.runner import BatchOptions, BatchResult, default_jobs, run_batch
from coreanalyze.batch.shard import Shard, parse_shard

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
