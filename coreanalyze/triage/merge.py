"""Merge the findings of every parser into one Report, as if one tool had seen the crash.

One crash, many views: gdb's native stack, faulthandler's Python stack and a fatal log
line often describe the same thread. Threads are matched by kernel tid, then by
pthread_t (gdb's "Thread 0x7f.. (LWP n)" links the two), and every format's crashing
thread is the one crashing thread. For each thread the richest native stack is kept and
the Python frames are put after it (Python called into native code), unless a format
already interleaved both (pystack --native).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coreanalyze.base import model
from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits
from coreanalyze.triage.gpu_facts import merged_gpu, merged_oom
from coreanalyze.triage.signals import number_of as signal_number

# Which format's native stack to prefer for one thread, best first.
NATIVE_PREFERENCE = (
    "gdb", "lldb", "coredumpctl", "macos-crash", "asan", "pystack", "backtrace-symbols", "absl-signal", "tf-log",
    "faulthandler", "kernel-log", "esp-idf-panic", "cortex-m-fault", "windows-error-report",
)  # fmt: skip
# Which format says best which thread crashed, best first.
CRASH_AUTHORITY = (
    "gdb", "lldb", "asan", "coredumpctl", "macos-crash", "kernel-log", "tf-log", "faulthandler", "gdb-py-bt",
    "pystack", "absl-signal", "backtrace-symbols", "esp-idf-panic", "cortex-m-fault", "windows-error-report",
)  # fmt: skip


@dataclass
class _Merged:
    tid: int | None = None
    pthread: int | None = None
    number: int | None = None
    name: str | None = None
    crashed: bool = False
    holds_gil: bool | None = None
    views: list[tuple[str, fd.TextThread]] = field(default_factory=list)


def _rank(order: tuple[str, ...], fmt: str) -> int:
    return order.index(fmt) if fmt in order else len(order)


def merge(found: list[fd.Finding], source_name: str) -> tuple[model.Report, str | None, list[str]]:
    """(report, abort message, formats used), from the findings in text order."""
    found = sorted(found, key=lambda f: f.line)
    warnings: list[str] = []
    pthread_tids: dict[int, int] = {}
    for f in found:
        pthread_tids.update(f.pthread_tids)

    merged: list[_Merged] = []
    crashed: _Merged | None = None
    ordered = sorted(found, key=lambda f: (_rank(CRASH_AUTHORITY, f.format), f.line))
    for f in ordered:
        for t in f.threads:
            tid = t.tid if t.tid is not None else pthread_tids.get(t.pthread) if t.pthread is not None else None
            target = None
            if t.crashed and crashed is not None and (tid is None or crashed.tid is None or crashed.tid == tid):
                target = crashed
            if target is None and tid is not None:
                target = next((m for m in merged if m.tid == tid), None)
            if target is None and t.pthread is not None:
                target = next((m for m in merged if m.pthread == t.pthread), None)
            if target is None:
                if len(merged) >= limits.MAX_THREADS:
                    warnings.append(f"more than {limits.MAX_THREADS} threads; the rest were left out")
                    continue
                target = _Merged()
                merged.append(target)
            target.tid = target.tid if target.tid is not None else tid
            target.pthread = target.pthread if target.pthread is not None else t.pthread
            if f.format == "gdb" or target.number is None:
                target.number = t.number if t.number is not None else target.number
            target.name = target.name or t.name
            if t.holds_gil is not None:
                target.holds_gil = t.holds_gil
            target.views.append((f.format, t))
            if t.crashed:
                if crashed is None:
                    crashed = target
                    target.crashed = True
                elif crashed is not target:
                    warnings.append(
                        f"{f.format} says another thread crashed ({_label(tid, t)}); kept the one "
                        f"{crashed.views[0][0]} names"
                    )

    threads = [_build_thread(m, i) for i, m in enumerate(merged)]
    _unique_tids(threads)
    report = model.Report(source="triage", threads=threads)
    crashed_index = merged.index(crashed) if crashed is not None else None
    if crashed_index is not None:
        report.crashing_thread = threads[crashed_index].tid

    report.core = _core_info(found, source_name, warnings)
    abort_message = _abort_message(found)
    report.classification.detail = next((f.detail for f in found if f.detail), None)
    report.classification.gpu, report.classification.oom = merged_gpu(found), merged_oom(found)
    if report.core.signal.address is None:
        report.core.signal.address = next((f.fault_address for f in found if f.fault_address is not None), None)
    sp = next((f.stack_pointer for f in found if f.stack_pointer is not None), None)
    if sp is not None and crashed_index is not None:
        threads[crashed_index].registers.setdefault("rsp", sp)
    if report.core.signal.name is None and crashed_index is not None:
        t = fd.TextThread(frames=threads[crashed_index].frames)
        if fd.reraised(t):
            # A handler re-raised what it caught: the signal raise() was given, if gdb showed it.
            name = next((f.raised_signal for f in found if f.raised_signal), None)
            if name is not None:
                report.core.signal = model.SignalInfo(number=signal_number(name), name=name, reraised_by="a signal handler")
                warnings.append(f"the text names no signal; {name} from the re-raising raise() call under the signal handler")
            else:
                warnings.append("a signal handler re-raised a signal the text does not name; the fault is below the handler")
        elif fd.calls_abort(t):
            report.core.signal = model.SignalInfo(number=6, name="SIGABRT")
            warnings.append("the text names no signal; SIGABRT assumed from the abort() frames")

    formats: list[str] = []
    for f in found:
        if f.substantive and f.format not in formats:
            formats.append(f.format)
        for w in f.warnings:
            warnings.append(w)
        if f.dropped_threads:
            warnings.append(f"{f.format}: {f.dropped_threads} more thread(s) were left out")
    report.warnings = _dedupe(warnings)[: limits.MAX_WARNINGS]
    return report, abort_message, formats


def _label(tid: int | None, t: fd.TextThread) -> str:
    if tid is not None:
        return f"tid {tid}"
    if t.pthread is not None:
        return f"thread {t.pthread:#x}"
    return "an unnamed thread"


def _pick_native(views: list[tuple[str, fd.TextThread]]) -> list[model.Frame]:
    native = [(fmt, t) for fmt, t in views if t.frames and "native" in t.kinds and "python" not in t.kinds]
    if not native:
        return []
    native.sort(key=lambda v: (_rank(NATIVE_PREFERENCE, v[0]), -len(v[1].frames)))
    return native[0][1].frames


def _build_thread(m: _Merged, position: int) -> model.Thread:
    mixed = [t for _, t in m.views if t.kinds == {"native", "python"}]
    if mixed:
        # Already interleaved where Python called native code: nothing to add.
        frames = max(mixed, key=lambda t: len(t.frames)).frames
    else:
        native = _pick_native(m.views)
        pythons = [t for _, t in m.views if t.frames and t.kinds == {"python"}]
        python = max(pythons, key=lambda t: len(t.frames)).frames if pythons else []
        frames = native + python
    frames = [_copy_frame(f, i) for i, f in enumerate(frames[: limits.MAX_FRAMES_PER_THREAD])]
    tid = m.tid if m.tid is not None else m.pthread if m.pthread is not None else m.number
    return model.Thread(
        tid=tid if tid is not None else position + 1,
        name=m.name,
        crashed=m.crashed,
        frames=frames,
        holds_gil=m.holds_gil,
    )


def _copy_frame(f: model.Frame, index: int) -> model.Frame:
    return model.Frame(**{**f.__dict__, "index": index})


def _unique_tids(threads: list[model.Thread]) -> None:
    seen: set[int] = set()
    for t in threads:
        while t.tid in seen:
            t.tid += 1
        seen.add(t.tid)


def _core_info(found: list[fd.Finding], source_name: str, warnings: list[str]) -> model.CoreInfo:
    core = model.CoreInfo(path=source_name)
    for f in found:
        core.pid = core.pid if core.pid is not None else f.pid
        core.cmdline = core.cmdline or f.cmdline
        core.executable = core.executable or f.executable
    with_signal = [f for f in found if f.signal is not None and f.signal.name]
    if not with_signal:
        return core
    best = max(with_signal, key=lambda f: (f.signal_strength, -f.line))
    sig = model.SignalInfo(**best.signal.__dict__)
    for f in with_signal:
        if f.signal.name == sig.name:
            sig.address = sig.address if sig.address is not None else f.signal.address
            sig.sender_pid = sig.sender_pid if sig.sender_pid is not None else f.signal.sender_pid
            sig.code = sig.code if sig.code is not None else f.signal.code
    strong_names = {f.signal.name for f in with_signal if f.signal_strength >= fd.SIGNAL_NAMED}
    if len(strong_names) > 1:
        warnings.append(f"the text names several signals ({', '.join(sorted(strong_names))}); used {sig.name}")
    core.signal = sig
    return core


def _abort_message(found: list[fd.Finding]) -> str | None:
    best: tuple[int, int, str] | None = None
    for f in found:
        for weight, text in f.messages:
            key = (weight, -f.line, text)
            if best is None or key[:2] > best[:2]:
                best = key
    return best[2] if best else None


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out
