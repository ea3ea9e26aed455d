"""The batch output directory, and the one record per core that makes a batch resumable.

    OUT/results/<identity>.json   one record per core, written atomically (tmp + rename):
                                  the record IS the fact that the core is done
    OUT/reports/<name>-<id>.html  the core's report, and .json beside it
    OUT/shrunk/<name>-<id>.core.zst  with --shrink: a group's example core, shrunk to attach
    OUT/kept/<name>-<id>.core[.zst]  `watch`: a full core its keep policy kept (and .nvcudmp beside)
    OUT/cores.jsonl, summary.json, index.html   derived from results/ alone, rewritten at the end

Everything derived is recomputed from results/, so a batch killed at any instant (SIGKILL
included) loses at most the cores in flight, and a rerun with --resume counts nothing twice:
a core is skipped when a record with its content identity exists.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from coreanalyze.base.atomicfile import TMP_MARK, write_atomically
from coreanalyze.base.errors import AnalysisFailed, BadInput
from coreanalyze.base.safenames import safe_stem

RECORD_SCHEMA = "coreanalyze-batch-core/1"
RESULTS_DIR = "results"
REPORTS_DIR = "reports"
SHRUNK_DIR = "shrunk"
KEPT_DIR = "kept"
KEPT = ("full", "shrunk", "none")  # what `watch` kept of a core
STATUSES = ("ok", "partial", "failed", "duplicate")
ANALYZED = ("ok", "partial")  # statuses that have a report and count in the groups

MAX_RECORD_BYTES = 1 << 20  # a record is a few KiB; anything bigger is not ours
MAX_RECORDS = 1_000_000
_IDENTITY = re.compile(r"^[0-9a-f]{64}$")
_REPORT_PATH = re.compile(r"^reports/[A-Za-z0-9][A-Za-z0-9._+-]*\.(?:html|json)$")
_SHRUNK_PATH = re.compile(r"^shrunk/[A-Za-z0-9][A-Za-z0-9._+-]*\.core\.zst$")
_KEPT_PATH = re.compile(r"^kept/[A-Za-z0-9][A-Za-z0-9._+-]*$")
_STEM_CHARS = 80
_TEXT_CHARS = 300
_MAX_FRAMES = 64
_MAX_PACKAGES = 1000
_ID_IN_NAME = 16


@dataclass
class CoreRecord:
    """What a batch knows about one core file once it is done with it."""

    identity: str  # content identity of the (decompressed) core
    file_identity: str  # identity of the file as stored (differs when compressed)
    path: str
    status: str  # one of STATUSES
    reason: str | None = None  # why failed / partial
    compression: str | None = None
    size: int | None = None  # bytes on disk
    timestamp: float | None = None  # when the process crashed, epoch seconds
    timestamp_source: str | None = None  # "xattr" | "filename" | "mtime"
    host: str | None = None  # systemd's hostname attribute, the process's HOSTNAME, else the directory
    host_source: str | None = None  # "xattr" | "environment" | "directory"
    pid: int | None = None
    executable: str | None = None
    signal: str | None = None
    signature: str | None = None
    category: str | None = None
    fault_kind: str | None = None
    culprit: dict[str, Any] = field(default_factory=dict)  # {function, module}
    summary: str | None = None
    confidence: str | None = None
    report_html: str | None = None  # relative to the output directory
    report_json: str | None = None
    duplicate_of: str | None = None  # path of the core this one repeats
    seconds: float | None = None  # time spent on it
    xattrs: dict[str, str] = field(default_factory=dict)
    # Wheels --fetch downloaded for this core (not those another core's analysis had fetched).
    wheels_downloaded: list[str] = field(default_factory=list)
    # The GPU core dump read beside this core: the same crash, not one of its own.
    gpu_core: str | None = None
    # What a fleet's statistics and the known-crash database look at (batch/facts.py).
    versions: dict[str, str] = field(default_factory=dict)  # python, tensorflow, tflite, cuda, driver
    packages: dict[str, str] = field(default_factory=dict)  # normalized package name -> version
    abort_message: str | None = None
    gpu_exception: str | None = None
    frames: list[str] = field(default_factory=list)  # crashing thread's functions, innermost first
    ops: list[str] = field(default_factory=list)  # ops its Python called (TensorFlow's generated op wrappers)
    known: dict[str, Any] | None = None  # classification.known of its report
    # batch --shrink, for a group's example: the shrunk core (relative path) and its bytes
    shrunk: str | None = None
    shrunk_size: int | None = None
    # `watch`: what its keep policy kept ("full" | "shrunk" | "none"; None: not decided yet, or a
    # batch's record), the full core and the GPU core dump kept in the output directory
    kept: str | None = None
    kept_core: str | None = None
    kept_gpu_core: str | None = None
    # systemd-coredump's record of the crash (unit, cmdline, boot_id, cgroup, container, ...:
    # coreanalyze/watch/coredump.py)
    coredump: dict[str, str] = field(default_factory=dict)
    # The job and rank of a multi-process run (report.job without its verdict; batch/jobs.py),
    # and what tells who ended it: its parent and the sender of its signal.
    job: dict[str, Any] | None = None
    ppid: int | None = None
    sender_pid: int | None = None

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    @property
    def key(self) -> str:
        """The results/ file name: one per core identity; duplicates get one per path."""
        if self.status == "duplicate":
            return "dup-" + hashlib.sha256(f"{self.identity}\0{self.path}".encode()).hexdigest()[:40]
        return self.identity

    def to_dict(self) -> dict[str, Any]:
        return {"schema": RECORD_SCHEMA, **dataclasses.asdict(self)}


_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "identity": (str,),
    "file_identity": (str,),
    "path": (str,),
    "status": (str,),
    "reason": (str, type(None)),
    "compression": (str, type(None)),
    "size": (int, type(None)),
    "timestamp": (int, float, type(None)),
    "timestamp_source": (str, type(None)),
    "host": (str, type(None)),
    "pid": (int, type(None)),
    "executable": (str, type(None)),
    "signal": (str, type(None)),
    "signature": (str, type(None)),
    "category": (str, type(None)),
    "fault_kind": (str, type(None)),
    "culprit": (dict,),
    "summary": (str, type(None)),
    "confidence": (str, type(None)),
    "report_html": (str, type(None)),
    "report_json": (str, type(None)),
    "duplicate_of": (str, type(None)),
    "seconds": (int, float, type(None)),
    "xattrs": (dict,),
    "wheels_downloaded": (list,),
    "gpu_core": (str, type(None)),
    "host_source": (str, type(None)),
    "versions": (dict,),
    "packages": (dict,),
    "abort_message": (str, type(None)),
    "gpu_exception": (str, type(None)),
    "frames": (list,),
    "ops": (list,),
    "known": (dict, type(None)),
    "shrunk": (str, type(None)),
    "shrunk_size": (int, type(None)),
    "kept": (str, type(None)),
    "kept_core": (str, type(None)),
    "kept_gpu_core": (str, type(None)),
    "coredump": (dict,),
    "job": (dict, type(None)),
    "ppid": (int, type(None)),
    "sender_pid": (int, type(None)),
}


def record_from_dict(d: Any) -> CoreRecord:
    """A record read back from disk (possibly another machine's): checked field by field, so a
    damaged or foreign file is rejected with a reason instead of poisoning the summary."""
    if not isinstance(d, dict) or d.get("schema") != RECORD_SCHEMA:
        raise ValueError("not a coreanalyze batch record")
    kwargs: dict[str, Any] = {}
    for name, types in _FIELD_TYPES.items():
        if name not in d:
            continue
        value = d[name]
        if isinstance(value, bool) or not isinstance(value, types):
            raise ValueError(f"field {name} has the wrong type")
        kwargs[name] = value
    for name in ("identity", "file_identity", "path", "status"):
        if name not in kwargs:
            raise ValueError(f"field {name} is missing")
    if not _IDENTITY.match(kwargs["identity"]) or not _IDENTITY.match(kwargs["file_identity"]):
        raise ValueError("bad identity")
    if kwargs["status"] not in STATUSES:
        raise ValueError(f"unknown status {kwargs['status']!r}")
    for name in ("report_html", "report_json"):
        if kwargs.get(name) is not None and not _REPORT_PATH.match(kwargs[name]):
            raise ValueError(f"{name} is not a report path of this layout")
    if kwargs.get("shrunk") is not None and not _SHRUNK_PATH.match(kwargs["shrunk"]):
        raise ValueError("shrunk is not a shrunk core's path of this layout")
    for name in ("kept_core", "kept_gpu_core"):
        if kwargs.get(name) is not None and not _KEPT_PATH.match(kwargs[name]):
            raise ValueError(f"{name} is not a kept core's path of this layout")
    if kwargs.get("kept") is not None and kwargs["kept"] not in KEPT:
        raise ValueError(f"unknown kept {kwargs['kept']!r}")
    kwargs["culprit"] = {k: v for k, v in kwargs.get("culprit", {}).items() if k in ("function", "module") and isinstance(v, (str, type(None)))}
    kwargs["xattrs"] = {k: v for k, v in kwargs.get("xattrs", {}).items() if isinstance(k, str) and isinstance(v, str)}
    kwargs["wheels_downloaded"] = [w[:300] for w in kwargs.get("wheels_downloaded", []) if isinstance(w, str)]
    for name in ("versions", "packages", "coredump"):
        kwargs[name] = _strings(kwargs.get(name, {}))
    if kwargs.get("job") is not None:
        kwargs["job"] = job_fields(kwargs["job"])
    kwargs["frames"] = [f[:_TEXT_CHARS] for f in kwargs.get("frames", [])[:_MAX_FRAMES] if isinstance(f, str)]
    kwargs["ops"] = [f[:_TEXT_CHARS] for f in kwargs.get("ops", [])[:_MAX_FRAMES] if isinstance(f, str)]
    return CoreRecord(**kwargs)


_JOB_TEXT = ("id", "role", "launcher", "master", "address", "host", "state", "sent_by")
_JOB_INTS = ("rank", "world_size", "local_rank")
_WAIT_TEXT = ("collective", "function", "file", "python_function", "message")
_WAIT_INTS = ("line", "peer")


def _plain(d: dict[str, Any], texts: tuple[str, ...], ints: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in texts:
        value = d.get(name)
        out[name] = value[:_TEXT_CHARS] if isinstance(value, str) else None
    for name in ints:
        value = d.get(name)
        out[name] = value if isinstance(value, int) and not isinstance(value, bool) else None
    return out


def job_fields(d: dict[str, Any]) -> dict[str, Any]:
    """A record's job as another machine's file may hold it: known fields of plain types only."""
    job = _plain(d, _JOB_TEXT, _JOB_INTS)
    waited = d.get("waited")
    job["waited"] = _plain(waited, _WAIT_TEXT, _WAIT_INTS) if isinstance(waited, dict) else None
    if job["waited"] is not None:
        job["waited"]["serving"] = waited.get("serving") is True
    return job


def _strings(d: dict[str, Any]) -> dict[str, str]:
    """A name -> version table from another machine's file: strings only, bounded."""
    return {k[:_TEXT_CHARS]: v[:_TEXT_CHARS] for k, v in list(d.items())[:_MAX_PACKAGES] if isinstance(k, str) and isinstance(v, str)}


def report_stem(core_path: str, identity: str) -> str:
    """`/var/crash/core.python3.0.<boot>.1234.<usec>.zst` -> `core.python3.0....1234.<usec>-<id16>`:
    sanitized, and unique because it carries the content identity."""
    name = os.path.basename(core_path)
    for suffix in (".zst", ".lz4", ".xz"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return f"{safe_stem(name)[:_STEM_CHARS]}-{identity[:_ID_IN_NAME]}"


class BatchStore:
    """One batch output directory."""

    def __init__(self, out: str | os.PathLike[str]):
        self.out = Path(out)
        self.results = self.out / RESULTS_DIR
        self.reports = self.out / REPORTS_DIR
        self.shrunk = self.out / SHRUNK_DIR
        self.kept = self.out / KEPT_DIR

    # -------------------------------------------------------------- set-up

    def has_results(self) -> bool:
        return self.results.is_dir() and any(p.suffix == ".json" for p in self.results.iterdir())

    def is_batch_dir(self) -> bool:
        return self.results.is_dir()

    def prepare(self, resume: bool) -> None:
        """Create the layout; refuse to mix a new batch into an old one unless resuming."""
        if self.out.exists() and not self.out.is_dir():
            raise BadInput(f"--out {self.out}: exists and is not a directory")
        if not resume and self.has_results():
            raise BadInput(
                f"--out {self.out} already holds batch results; pass --resume to continue that batch, "
                "or choose an empty directory"
            )
        try:
            self.results.mkdir(parents=True, exist_ok=True)
            self.reports.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise BadInput(f"--out {self.out}: cannot create it: {e.strerror or e}") from None
        self.remove_temporaries()

    def remove_temporaries(self) -> None:
        """Half-written files of a run that was killed: never results, safe to drop."""
        for directory in (self.out, self.results, self.reports, self.shrunk, self.kept):
            if not directory.is_dir():
                continue
            for p in directory.iterdir():
                if p.name.startswith(".") and TMP_MARK in p.name:
                    try:
                        p.unlink()
                    except OSError:
                        pass

    # -------------------------------------------------------------- records

    def write(self, record: CoreRecord) -> None:
        self._write(self.results / f"{record.key}.json", json.dumps(record.to_dict(), indent=1, sort_keys=True) + "\n")

    def _write(self, path: Path, text: str) -> None:
        try:
            write_atomically(path, text, durable=True)
        except OSError as e:
            # Disk full, directory removed: the batch cannot keep results, so it stops here.
            raise AnalysisFailed(f"cannot write {path}: {e.strerror or e}") from None

    def load(self, warnings: list[str] | None = None) -> list[CoreRecord]:
        """Every record in results/, in a stable order; unreadable files are skipped with a
        warning (they can only come from outside: ours are written atomically)."""
        records: list[CoreRecord] = []
        if not self.results.is_dir():
            return records
        for p in sorted(self.results.iterdir())[:MAX_RECORDS]:
            if p.suffix != ".json" or p.name.startswith("."):
                continue
            try:
                if p.stat().st_size > MAX_RECORD_BYTES:
                    raise ValueError("too large")
                record = record_from_dict(json.loads(p.read_text(encoding="utf-8")))
                if p.stem != record.key:
                    raise ValueError("file name does not match its content")
            except (OSError, ValueError, UnicodeDecodeError) as e:
                if warnings is not None:
                    warnings.append(f"{p}: skipped: {e}")
                continue
            records.append(record)
        return records

    # -------------------------------------------------------------- reports

    def write_report(self, stem: str, extension: str, text: str) -> str:
        """Write a report file; returns its path relative to the output directory."""
        name = f"{stem}{extension}"
        self._write(self.reports / name, text)
        return f"{REPORTS_DIR}/{name}"

    def shrunk_path(self, stem: str) -> tuple[Path, str]:
        """Where a shrunk core goes: the file, and its path relative to the output directory."""
        name = f"{stem}.core.zst"
        return self.shrunk / name, f"{SHRUNK_DIR}/{name}"

    def write_output(self, name: str, text: str) -> Path:
        path = self.out / name
        self._write(path, text)
        return path


def lines_of(records: Iterable[CoreRecord]) -> str:
    """cores.jsonl: one record per line, sorted by path, for other tools."""
    ordered = sorted(records, key=lambda r: (r.path, r.key))
    return "".join(json.dumps(r.to_dict(), sort_keys=True) + "\n" for r in ordered)
