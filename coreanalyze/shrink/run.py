"""`coreanalyze shrink`: analyze a core once, recording what the analysis and gdb need, and
write a core that holds only that (see coreanalyze/shrink/__init__.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from typing import Callable

from coreanalyze.base import model
from coreanalyze.base.atomicfile import TMP_MARK
from coreanalyze.base.errors import BadInput
from coreanalyze.corefile import elfcore
from coreanalyze.corefile import shrunk as marker
from coreanalyze.process.process import Process
from coreanalyze.shrink import keep, scans
from coreanalyze.shrink import redact as redact_
from coreanalyze.shrink.pages import PageSet
from coreanalyze.shrink.recorder import recorder
from coreanalyze.shrink.writer import WrittenRun, write_core

# gdb's own reads of the core's memory while it loads it and unwinds every thread, as
# `set debug target 1` logs them: (object, annex, readbuf, writebuf, address, length); objects
# 1-4 are memory (plain, raw, stack, code). Whichever layer logs it ("core:", "multi-thread:"):
# gdb prints a frame's string argument from a read only the thread layer logs.
GDB_READ = re.compile(r"[a-z-]+:target_xfer_partial \(([1-4]), [^,]*, [^,]*, [^,]*, (0x[0-9a-f]+), (\d+)\)")
MAX_GDB_READ = 1 << 20
# gdb names memory a backtrace needed and the core lacks: kept in the next round.
MISSING_MEMORY = re.compile(r"Cannot access memory at address (0x[0-9a-f]+)")
GDB_ROUNDS = 4  # rounds of "write, let gdb unwind, keep what it missed"
GDB_BT_TIMEOUT = 600.0  # when the options give no --timeout
MISSED_STACK_BYTES = 64 << 10  # kept above an address gdb missed: it unwinds upwards
ZSTD_LEVEL = 19  # the file is small by now; the smaller it gets, the easier to attach


@dataclass
class ShrinkResult:
    original_size: int
    size: int  # bytes of the shrunk core (before compression)
    written: int  # bytes of the file written (compressed with --compress)
    kept: dict[str, int] = field(default_factory=dict)  # why -> bytes kept for it
    failure: str | None = None  # the analysis was partial: the shrunk core holds what it read
    gdb_missing: list[str] = field(default_factory=list)  # addresses gdb still could not read
    redacted: list[str] = field(default_factory=list)  # what --redact dropped, in words


def shrink_core(
    core: str, output: str, options, *, compress: bool = False, stack_bytes: int = keep.STACK_PER_THREAD, redact: bool = False
) -> ShrinkResult:
    """Write the shrunk copy of `core` (plain or compressed) to `output`. options: AnalyzeOptions."""
    from coreanalyze.corefile.compressed import compression_of, decompressed

    if os.path.realpath(output) == os.path.realpath(core):
        raise BadInput(f"{output}: the shrunk core would overwrite the core it is made from")
    directory = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(directory) or not os.access(directory, os.W_OK):
        raise BadInput(f"{output}: cannot write there ({directory} is not a writable directory)")
    compression = compression_of(core) if os.path.isfile(core) else None
    # The GPU core the driver wrote is looked for beside the core given, not beside a copy.
    options = replace(options, gpu_core_beside=options.gpu_core_beside or os.path.abspath(core))
    with decompressed(core, compression) as plain:
        return _shrink_plain(plain, output, options, compress, stack_bytes, redact)


def _shrink_plain(plain: str, output: str, options, compress: bool, stack_bytes: int, redact: bool) -> ShrinkResult:
    from coreanalyze.pipeline.analyze import analyze_core

    layout = elfcore.read_layout(plain)
    earlier = marker.find_marker(layout, plain)
    original_size = earlier.original_size if earlier and earlier.original_size else os.path.getsize(plain)
    kept = PageSet()
    searches: list[tuple[int, int]] = []
    if redact:
        result = analyze_core(plain, options)  # its modules and program; what it read is not kept
    else:
        result = analyze_core(plain, options, record=recorder(kept, searches=searches))
    with Process.open(plain, record=recorder(kept, "gdb: stacks, objects, link map", searches)) as process:
        keep.keep_stacks(process, kept, stack_bytes)
        keep.keep_thread_descriptors(process, kept)
        keep.keep_loader_data(process, kept)
        keep.keep_object_headers(process, kept)
        keep.keep_link_map(process, kept)
        if not redact:
            scans.keep_abort_messages(process, kept)
            scans.keep_distribution_names(process, kept)
    _walk_python(plain, result.report, recorder(kept, "python frames", searches), imports=not redact)
    _keep_gdb_reads(plain, kept, result.report, options)
    dropped = list(redact_.DROPPED) if redact else (earlier.redacted if earlier else [])
    note = marker.marker_note(layout.endian, model.ShrunkCore(original_size=original_size, redacted=dropped))
    found = _needles(plain, result.report.modules) if redact else None

    def blank(path: str, runs: list[WrittenRun]) -> None:
        if found is not None:
            redact_.blank_written(path, runs, found)

    def rewrite_notes(data: bytes) -> bytes:
        data = marker.without_marker(layout.endian, data)
        return redact_.redact_notes(layout.endian, data) if redact else data

    directory = os.path.dirname(os.path.abspath(output))
    # Named as atomicfile names its drafts, so that a batch killed meanwhile can tell them.
    handle, draft = tempfile.mkstemp(prefix=f".{os.path.basename(output)}{TMP_MARK}", dir=directory)
    os.close(handle)
    try:

        def write() -> int:
            return write_core(plain, layout, kept, note, draft, rewrite_notes, blank)

        missing: list[str] = []
        for _round in range(GDB_ROUNDS):
            size = write()
            missing = _keep_missed(plain, kept, _gdb_missing(draft, result.report, options))
            if not missing:
                break
        else:
            size = write()
        if not redact and not _same_report(draft, result.report, options):
            # Something the searches found is not where scans.py looks: keep all they read.
            for address, length in searches:
                kept.add(address, length, "searches (the report differed without them)")
            size = write()
        written = _compress_to(draft, output) if compress else _move(draft, output)
    finally:
        if os.path.exists(draft):
            os.unlink(draft)
    return ShrinkResult(
        original_size=original_size, size=size, written=written,
        kept={why: size for why, size in kept.reasons.items() if size},
        failure=result.failure, gdb_missing=missing, redacted=dropped,
    )  # fmt: skip


def _needles(plain: str, modules: list[model.Module]) -> redact_.Needles:
    # With the analysis's modules: the environment the process set itself is read through the
    # `environ` symbol, which a Process with no modules cannot find.
    with Process.open(plain, modules) as process:
        return redact_.needles(process)


def _walk_python(plain: str, report: model.Report, observe: Callable[[int, int], None], imports: bool = True) -> None:
    """Run the Python-frame walker in-process over the core, as gdb ran it: what it reads
    (heard by observe) is what the report's Python frames need."""
    from coreanalyze.python.coretarget import ReadError, walk_core
    from coreanalyze.python.pyruntime import runtime_unless_symbols

    with Process.open(plain, report.modules, record=observe) as process:
        runtime = runtime_unless_symbols(process, report.modules)
        try:
            walk_core(process, report.modules, {"imports": imports, **(runtime.walker_options() if runtime else {})})
        except (ReadError, OSError, ValueError):
            pass  # the walk in the analysis met the same end; what it read so far is recorded


# Fields that differ between a core and its shrunk copy by design.
OWN_FIELDS = ("path", "size", "shrunk")


def comparable(report_json: str) -> dict:
    """A JSON report without the fields that name the core file itself."""
    data = json.loads(report_json)
    core = data.get("core")
    if isinstance(core, dict):
        for name in OWN_FIELDS:
            core.pop(name, None)
    return data


def _same_report(draft: str, report: model.Report, options) -> bool:
    """Whether the shrunk core gives the full core's report."""
    from coreanalyze.pipeline.analyze import analyze_core
    from coreanalyze.render import render

    again = analyze_core(draft, options)
    return comparable(render(again.report, "json")) == comparable(render(report, "json"))


def _gdb_backtraces(core: str, report: model.Report, options, *, trace_reads: bool = False) -> str:
    """gdb's output for every thread's backtrace of `core` ('' when it cannot run)."""
    from coreanalyze.arch.debugger import gdb_for_core

    program = (report.core.executable_used if report.core else None) or options.python
    if not program or report.core is None:
        return ""
    # The analysis's own choice: gdb-multiarch for a core of another architecture.
    command = [gdb_for_core(options.gdb, report.core.arch), "-nx", "-batch", "-ex", "set pagination off", "-ex", "set debuginfod enabled off"]
    if options.sysroot and os.path.isdir(options.sysroot):
        command += ["-ex", f"set sysroot {os.path.abspath(options.sysroot)}"]
    command += ["-ex", f"file {program}"]
    if trace_reads:
        command += ["-ex", "set debug target 1"]
    command += ["-ex", f"core-file {core}", "-ex", "thread apply all bt"]
    try:
        run = subprocess.run(
            command,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=options.timeout or GDB_BT_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return run.stdout + run.stderr


def _keep_gdb_reads(plain: str, kept: PageSet, report: model.Report, options) -> None:
    """Keep what gdb reads from the full core to load it and print every thread's backtrace
    (libthread_db's thread descriptors and lists, unwinding, the link map)."""
    for match in GDB_READ.finditer(_gdb_backtraces(plain, report, options, trace_reads=True)):
        length = int(match.group(3))
        if length <= MAX_GDB_READ:
            kept.add(int(match.group(2), 16), length, "gdb's reads for the backtraces")


def _gdb_missing(core: str, report: model.Report, options) -> list[str]:
    """Addresses gdb could not read while printing every thread's backtrace of `core`."""
    return sorted(set(MISSING_MEMORY.findall(_gdb_backtraces(core, report, options))))


def _keep_missed(plain: str, kept: PageSet, missing: list[str]) -> list[str]:
    """Keep, from the full core, the memory gdb missed; returns the addresses the full core
    has (gdb misses the others in the full core too)."""
    with Process.open(plain) as process:
        present = [text for text in missing if process.is_present(int(text, 16))]
        for text in present:
            keep.keep_stack_from(process, kept, int(text, 16), MISSED_STACK_BYTES, "gdb: memory it missed")
    return present


def _move(draft: str, output: str) -> int:
    os.replace(draft, output)
    return os.path.getsize(output)


def _compress_to(draft: str, output: str) -> int:
    """zstd, which `coreanalyze` reads back as it is (coreanalyze.corefile.compressed); written
    beside the draft and renamed, so that `output` is never half a file."""
    try:
        import zstandard
    except ImportError as exc:
        raise BadInput(f"--compress needs zstandard (pip install zstandard): {exc}") from None
    handle, packed = tempfile.mkstemp(prefix=os.path.basename(draft), dir=os.path.dirname(draft))
    try:
        with open(draft, "rb") as src, os.fdopen(handle, "wb") as out:
            zstandard.ZstdCompressor(level=ZSTD_LEVEL).copy_stream(src, out)
        return _move(packed, output)
    finally:
        if os.path.exists(packed):
            os.unlink(packed)
