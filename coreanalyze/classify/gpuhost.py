"""Where the host stood: the thread blocked in a CUDA, HIP or collective call, and its Python line.

A GPU faults or hangs on its own time; the host thread that launched the work, or waits for it
(a synchronize, a stream or event wait, a synchronous copy, an NCCL call), is where the user
stands. When the driver ends the process from a thread of its own, that thread's stack says
nothing about the user's code: the host thread's innermost Python line does.

The calls and their roles are data: host_calls.toml beside this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from coreanalyze import rulesdata
from coreanalyze.base.model import Frame, LaunchedFrom, Report, Thread
from coreanalyze.base.pyfiles import is_library_file
from coreanalyze.base.vocabulary import GpuCallRole
from coreanalyze.classify.names import normalize_function
from coreanalyze.rulesdata.kinds import GPU_HOST_CALLS
from coreanalyze.symbols.exportsonly import RULES_FILE

ROLES = tuple(GpuCallRole)


@dataclass(frozen=True)
class CallRule:
    role: str
    waits: bool
    function: re.Pattern[str]


@dataclass(frozen=True)
class HostCallRules:
    window: int
    version_suffix: re.Pattern[str]
    calls: tuple[CallRule, ...]
    any_call: re.Pattern[str]  # every rule's pattern at once: most frames are no call at all

    def match(self, name: str) -> CallRule | None:
        if not name or not self.any_call.search(name):
            return None
        return next((c for c in self.calls if c.function.search(name)), None)


def parse_host_call_rules(raw: dict[str, Any]) -> HostCallRules:
    """The rules from host_calls.toml's contents; a bad entry raises ValueError."""
    calls = []
    for i, entry in enumerate(raw.get("call", [])):
        role = entry.get("role")
        if role not in ROLES:
            raise ValueError(f"call #{i + 1}: unknown role {role!r} (one of: {', '.join(ROLES)})")
        if not isinstance(entry.get("waits"), bool):
            raise ValueError(f"call #{i + 1}: waits must be true or false")
        try:
            calls.append(CallRule(role, entry["waits"], re.compile(entry["function"])))
        except (KeyError, re.error, TypeError) as e:
            raise ValueError(f"call #{i + 1}: function: {e}") from None
    settings = raw.get("settings", {})
    return HostCallRules(
        window=int(settings.get("window", 32)),
        version_suffix=re.compile(settings.get("version_suffix", r"$^")),
        calls=tuple(calls),
        any_call=re.compile("|".join(f"(?:{c.function.pattern})" for c in calls) or r"$^"),
    )


@lru_cache(maxsize=1)
def host_call_rules() -> HostCallRules:
    return parse_host_call_rules(rulesdata.shipped(RULES_FILE, GPU_HOST_CALLS))


@dataclass(frozen=True)
class HostCall:
    """One thread inside a GPU call: the call, its role, and the Python line that made it."""

    tid: int
    api: str  # as the frame names it: "cuCtxSynchronize_v2"
    short_api: str  # without the version suffixes: "cuCtxSynchronize"
    role: str
    waits: bool  # the thread waits for the GPU (or a peer's GPU)
    frame_index: int
    python: Frame | None  # the innermost Python frame of the user's code (else the innermost)
    main: bool = False


def call_name(frame: Frame) -> str:
    """The name a call rule matches: the frame's function, or for an unnamed frame of a
    stripped library the exported entry point it runs for."""
    if frame.kind != "native":
        return ""
    return normalize_function(frame.function or frame.raw_function or frame.entry_point or "")


def _user_python_frame(thread: Thread) -> Frame | None:
    python = [f for f in thread.frames if f.kind == "python"]
    return next((f for f in python if not is_library_file(f.file)), python[0] if python else None)


def thread_call(thread: Thread, rules: HostCallRules | None = None, *, main: bool = False) -> HostCall | None:
    """The innermost GPU call among the thread's innermost native frames, or None."""
    rules = rules or host_call_rules()
    seen = 0
    for frame in thread.frames:
        if frame.kind == "python":
            break  # the native code under the innermost Python frame is the thread's own call
        seen += 1
        if seen > rules.window:
            break
        name = call_name(frame)
        rule = rules.match(name)
        if rule is not None:
            return HostCall(
                tid=thread.tid,
                api=name,
                short_api=rules.version_suffix.sub("", name) or name,
                role=rule.role,
                waits=rule.waits,
                frame_index=frame.index,
                python=_user_python_frame(thread),
                main=main,
            )
    return None


def find_host_call(report: Report, rules: HostCallRules | None = None) -> HostCall | None:
    """The thread where the user stands in a GPU process: the crashing thread when it is inside
    a GPU call, else the thread in a GPU call that runs Python (one that waits for the GPU
    first, the main thread first among equals), else any thread in a GPU call."""
    rules = rules or host_call_rules()
    crashed = report.crashed_thread
    pid = report.core.pid if report.core is not None else None
    if crashed is not None:
        own = thread_call(crashed, rules, main=crashed.tid == pid)
        if own is not None:
            return own
    best: tuple[tuple[bool, bool, bool], HostCall] | None = None
    for thread in report.threads:
        if thread is crashed:
            continue
        call = thread_call(thread, rules, main=thread.tid == pid or thread.role == "main")
        if call is None:
            continue
        rank = (call.python is not None, call.waits, call.main)
        if best is None or rank > best[0]:
            best = (rank, call)
    return best[1] if best is not None else None


def python_where(frame: Frame) -> str:
    """"launch (s2_illegal_address.py:17)"."""
    file = (frame.file or "?").rsplit("/", 1)[-1]
    line = f":{frame.line}" if frame.line is not None else ""
    return f"{frame.function or '?'} ({file}{line})"


def thread_words(call: HostCall) -> str:
    return f"the main thread ({call.tid})" if call.main else f"thread {call.tid}"


def _python_part(call: HostCall, lead: str) -> str:
    return f", {lead} {python_where(call.python)}" if call.python is not None else ""


def call_words(call: HostCall) -> str:
    """"waiting for the GPU in cuCtxSynchronize_v2, from Python launch (x.py:17)"."""
    doing = "waiting for the GPU in" if call.waits else "in"
    return f"{doing} {call.api}{_python_part(call, 'from Python')}"


def host_sentence(call: HostCall, crashed: Thread | None, library_thread: str | None) -> str | None:
    """The sentence the verdict gains when the crash is in another thread than the host call:
    library_thread names the GPU library when the crashing thread is one of its own threads."""
    if crashed is not None and crashed.tid == call.tid:
        return None
    where = f"in a thread of {library_thread}, not in the user's code" if library_thread else "in another thread"
    return f"The crash is {where}: {thread_words(call)} was {call_words(call)}."


def evidence_line(call: HostCall) -> str:
    state = "waits for the GPU" if call.waits else "does not wait"
    where = f"thread {call.tid} is in {call.api} (frame #{call.frame_index}; {call.role}, {state})"
    return f"GPU call: {where}{_python_part(call, 'called from Python')}"


def host_launched_from(report: Report, call: HostCall | None = None) -> LaunchedFrom | None:
    """launched_from for a crash in the GPU stack in a thread that runs no Python (a driver's
    thread): the host GPU call's innermost user Python line. None when the classification did
    not take the crash for the GPU's (classification.gpu), the crashing thread has Python
    frames of its own, or no thread is in a GPU call from Python."""
    crashed = report.crashed_thread
    if report.classification.gpu is None or crashed is None or any(f.kind == "python" for f in crashed.frames):
        return None
    call = call or find_host_call(report)
    if call is None or call.tid == crashed.tid or call.python is None:
        return None
    frame = call.python
    return LaunchedFrom(tid=call.tid, file=frame.file, line=frame.line, function=frame.function)
