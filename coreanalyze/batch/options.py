"""What a batch is asked to do: the options both engines (local processes, a Dask cluster) read."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from coreanalyze.batch.inputs import MAX_CORE_BYTES
from coreanalyze.batch.shard import Shard
from coreanalyze.pipeline.analyze import AnalyzeOptions

DEFAULT_TIMEOUT = 300.0
# Beyond --timeout before the batch kills a worker: gdb's own limit (the same --timeout) fires
# first and still yields a partial report; this catches a hang anywhere else.
GRACE_SECONDS = 30.0


@dataclass
class BatchOptions:
    out: Path
    analyze: AnalyzeOptions = field(default_factory=AnalyzeOptions)
    jobs: int | None = None  # None: one per CPU this process may use
    timeout: float = DEFAULT_TIMEOUT  # per core
    resume: bool = False
    shard: Shard | None = None
    progress: bool = False
    tmp_dir: str | None = None  # where compressed cores are decompressed
    max_core_bytes: int = MAX_CORE_BYTES
    grace: float = GRACE_SECONDS  # beyond `timeout` before a worker is killed
    cluster: str | None = None  # a Dask scheduler's address or local:N (batch/cluster.py); None: here
    known_files: list[Path] = field(default_factory=list)  # --known: a fleet's own known crashes
    since: Path | None = None  # --since: the previous batch's output directory
    shrink: bool = False  # --shrink: each group's example shrunk to attach (batch/shrinking.py)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)
