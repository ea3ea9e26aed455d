"""What `watch` keeps of each core: the policy per crash group, inside a disk budget.

The first `full` cores of each signature are kept whole in OUT/kept/ (a hard link when OUT is on
the watched file system, else a copy); every other analyzed core is kept shrunk to what its
report needs (OUT/shrunk/, batch's shrinking) or not at all (`others`). A core that does not fit
the budget (or the disk) is kept smaller instead: full -> shrunk -> none. The GPU core dump the
analysis read beside a core is kept beside what is kept of it. A core that could not be analyzed
or repeats another's bytes is not kept: its original stays where it is, or its content is kept
under the core it repeats.

Every file is written under a temporary name, synced and renamed, so that the originals are
removed (--delete-analyzed) only once what replaces them is on disk.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from coreanalyze.base.atomicfile import replacing
from coreanalyze.batch.inputs import CoreInput
from coreanalyze.batch.options import BatchOptions
from coreanalyze.batch.shrinking import shrink_records
from coreanalyze.batch.store import ANALYZED, KEPT_DIR, BatchStore, CoreRecord, report_stem

GPU_CORE_SUFFIX = ".nvcudmp"
COPY_CHUNK = 8 << 20


@dataclass(frozen=True)
class KeepPolicy:
    full: int = 1  # full cores kept per signature, the first ones to arrive
    others: str = "shrunk"  # the rest: "shrunk" | "none"
    budget: int | None = None  # bytes OUT may hold (reports, records, kept cores); None: no limit
    delete_analyzed: bool = False  # remove an original once what is kept of it is written


def sync_path(path: Path) -> None:
    """The file and its directory entry on disk."""
    with open(path, "rb") as f:
        os.fsync(f.fileno())
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def place(source: str, target: Path) -> int:
    """`source` at `target`: hard-linked when both are on one file system, else copied; synced.
    Returns the bytes it adds to OUT. OSError (ENOSPC, ...) leaves nothing behind."""
    target.parent.mkdir(exist_ok=True)
    with replacing(target) as tmp:
        try:
            os.link(source, tmp)
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                raise
            with open(source, "rb") as src, open(tmp, "xb") as dst:
                shutil.copyfileobj(src, dst, COPY_CHUNK)
                dst.flush()
                os.fsync(dst.fileno())
    sync_path(target)
    return target.stat().st_size


def disk_usage(out: Path) -> int:
    """Bytes of the files under OUT (a file linked twice counts once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for root, _, files in os.walk(out):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


class Keeper:
    def __init__(self, store: BatchStore, policy: KeepPolicy, options: BatchOptions, records: list[CoreRecord], warnings: list[str]):
        self.store = store
        self.policy = policy
        self.options = options
        self.warnings = warnings
        self.full = Counter(r.signature for r in records if r.kept == "full")
        self.used = 0

    def measure(self) -> None:
        """What OUT holds now (reports and records included), before the next cores."""
        if self.policy.budget is not None:
            self.used = disk_usage(self.store.out)

    def _fits(self, size: int) -> bool:
        return self.policy.budget is None or self.used + size <= self.policy.budget

    def keep(self, record: CoreRecord, core: CoreInput) -> tuple[CoreRecord, bool]:
        """The record with what was kept of its core (not yet written), and whether the policy's
        choice was honoured (only then may the original go)."""
        if record.status not in ANALYZED:
            return replace(record, kept="none"), record.status == "duplicate"
        wanted = "full" if self.full[record.signature] < self.policy.full else self.policy.others
        kept = "none"
        if wanted == "full":
            record, kept = self._keep_full(record, core)
        if kept == "none" and wanted != "none":
            record, kept = self._keep_shrunk(record)
        if kept != "none":
            record = self._keep_gpu_core(record)
        if kept == "full":
            self.full[record.signature] += 1
        return replace(record, kept=kept), kept == wanted

    def _stem(self, record: CoreRecord) -> str:
        return report_stem(record.path, record.identity)

    def _keep_full(self, record: CoreRecord, core: CoreInput) -> tuple[CoreRecord, str]:
        if not self._fits(core.size):
            self.warnings.append(f"{record.path}: kept shrunk, not whole: the budget of {self.policy.budget} bytes would be exceeded")
            return record, "none"
        name = f"{self._stem(record)}.core" + (f".{core.compression}" if core.compression else "")
        try:
            self.used += place(record.path, self.store.kept / name)
        except OSError as e:
            self.warnings.append(f"{record.path}: not kept whole: {e.strerror or e}")
            return record, "none"
        return replace(record, kept_core=f"{KEPT_DIR}/{name}"), "full"

    def _keep_shrunk(self, record: CoreRecord) -> tuple[CoreRecord, str]:
        written = shrink_records(self.store, [record], self.options, self.warnings)
        if not written or written[0].shrunk is None:
            return record, "none"
        shrunk = written[0]
        path = self.store.out / shrunk.shrunk
        try:
            sync_path(path)
        except OSError as e:
            self.warnings.append(f"{record.path}: its shrunk core could not be synced: {e.strerror or e}")
            return self._drop_shrunk(record, path), "none"
        if not self._fits(shrunk.shrunk_size or 0):
            self.warnings.append(f"{record.path}: not kept: the budget of {self.policy.budget} bytes would be exceeded")
            return self._drop_shrunk(record, path), "none"
        self.used += shrunk.shrunk_size or 0
        return shrunk, "shrunk"

    def _drop_shrunk(self, record: CoreRecord, path: Path) -> CoreRecord:
        try:
            path.unlink()
        except OSError:
            pass
        return replace(record, shrunk=None, shrunk_size=None)

    def _keep_gpu_core(self, record: CoreRecord) -> CoreRecord:
        if not record.gpu_core or not os.path.isfile(record.gpu_core):
            return record
        name = f"{self._stem(record)}{GPU_CORE_SUFFIX}"
        try:
            size = os.path.getsize(record.gpu_core)
            if not self._fits(size):
                self.warnings.append(f"{record.gpu_core}: the GPU core dump is not kept: over the budget")
                return record
            self.used += place(record.gpu_core, self.store.kept / name)
        except OSError as e:
            self.warnings.append(f"{record.gpu_core}: the GPU core dump is not kept: {e.strerror or e}")
            return record
        return replace(record, kept_gpu_core=f"{KEPT_DIR}/{name}")


def may_remove(record: CoreRecord, store: BatchStore) -> bool:
    """Whether the original may go once this record is on disk: its bytes are kept (whole or
    shrunk) in OUT, or are another core's. A core kept not at all by choice is removed by the
    pass that chose so (Watcher), never on a later start's guess."""
    if record.status == "duplicate":
        return True
    if record.kept == "full":
        return bool(record.kept_core) and (store.out / record.kept_core).is_file()
    if record.kept == "shrunk":
        return bool(record.shrunk) and (store.out / record.shrunk).is_file()
    return False
