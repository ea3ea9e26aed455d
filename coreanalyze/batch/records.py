"""A batch's record keeping, one for both engines (local worker processes and a Dask cluster):
which core owns each content (claims), which plain file must own a content before any
compressed copy of it, every record written the moment it exists, and the counts.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import replace

from coreanalyze.batch.inputs import CoreInput
from coreanalyze.batch.options import BatchOptions
from coreanalyze.batch.store import BatchStore, CoreRecord
from coreanalyze.batch.worker import WorkerConfig, base_record


class RecordKeeper:
    """Claims, owners and records of one batch; the engines subclass it."""

    def __init__(self, options: BatchOptions, store: BatchStore, claimed: dict[str, str], on_record):
        self.options = options
        self.store = store
        self.claimed = claimed  # content identity -> path of the core analyzed for it
        self.owners: dict[str, str] = {}  # content identity -> the plain file that must own it
        self.on_record = on_record
        self.limit = options.timeout + options.grace
        self.counts: Counter = Counter()
        self.config = WorkerConfig(
            out=str(options.out),
            options=replace(options.analyze, timeout=options.timeout),
            tmp_dir=options.tmp_dir,
            max_core_bytes=options.max_core_bytes,
            parent_pid=os.getpid(),
            known_files=tuple(str(p) for p in options.known_files),
        )

    def keep(self, record: CoreRecord) -> None:
        if record.status != "duplicate":
            # A core that failed before it could claim its content (a corrupt stream, a worker
            # that died) is still one file among others with the same bytes.
            holder = self.claimed.setdefault(record.identity, record.path)
            if holder != record.path:
                record.status, record.duplicate_of = "duplicate", holder
        if record.status == "duplicate" and record.duplicate_of is None:
            record.duplicate_of = self.claimed.get(record.identity)
        self.store.write(record)
        self.counts[record.status] += 1
        if self.on_record:
            self.on_record(record)

    def note_owners(self, pending: list[CoreInput]) -> None:
        """Which plain file owns each content not yet claimed: the smallest path among them."""
        for core in pending:
            if core.compression is None and core.file_identity not in self.claimed:
                current = self.owners.get(core.file_identity)
                if current is None or core.path < current:
                    self.owners[core.file_identity] = core.path

    def sort_out(self, inputs: list[CoreInput], done: list[CoreRecord]) -> tuple[list[CoreInput], int]:
        """The cores still to analyze, and how many of them an earlier run did (by the file's
        bytes); those bytes under a new name are recorded as a duplicate, never counted again."""
        by_file = {r.file_identity: r for r in done}
        done_paths = {r.path for r in done}
        pending: list[CoreInput] = []
        skipped = 0
        for core in inputs:
            earlier = by_file.get(core.file_identity)
            if earlier is None:
                pending.append(core)
                continue
            skipped += 1
            if core.path not in done_paths:
                record = base_record(core)
                record.identity, record.status = earlier.identity, "duplicate"
                self.keep(record)
        return pending, skipped
