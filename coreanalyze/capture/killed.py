"""The report of a process no one could hold: killed by SIGKILL (the kernel's OOM killer, a
cgroup limit, `kill -9`), or one whose core could not be written. It says what is known without
a core: how it died, its memory cgroup's OOM kills, its peak memory and the limit."""

from __future__ import annotations

import signal

from coreanalyze import __version__
from coreanalyze.base import model
from coreanalyze.base.vocabulary import Confidence, FaultKind
from coreanalyze.capture.requests import CrashRequest


def report_without_core(request: CrashRequest) -> model.Report:
    argv = request.argv
    number = signal.SIGKILL if request.killed else request.signal
    name = signal.Signals(number).name if number else None
    core = model.CoreInfo(
        path="",
        pid=request.pid,
        executable=argv[0] if argv else None,
        cmdline=" ".join(argv) or None,
        signal=model.SignalInfo(number=int(number) if number else None, name=name),
    )
    classification = model.Classification(confidence=Confidence.LOW)
    if request.killed:
        _killed(classification, request)
    else:
        classification.summary = f"{name or 'a fatal signal'}: the core could not be written ({request.core_problem or 'no reason given'})"
        classification.evidence.append("no core: the report holds only what the watcher saw")
    return model.Report(core=core, classification=classification, source="capture", tool_version=__version__)


def _killed(classification: model.Classification, request: CrashRequest) -> None:
    peak = request.peak_rss or request.cgroup_peak
    limit = request.cgroup_limit
    if request.oom_kills:
        classification.fault_kind = FaultKind.OUT_OF_MEMORY
        classification.oom = model.OomInfo(allocator="cgroup", in_use=peak, limit=limit)
        classification.summary = (
            f"SIGKILL by the OOM killer: the memory cgroup counted {request.oom_kills} OOM kill(s) while it ran"
            + (f" (peak {_mib(peak)}" + (f" of a {_mib(limit)} limit)" if limit else ")") if peak else "")
        )
        classification.evidence.append(f"memory cgroup oom_kill count grew by {request.oom_kills}")
        classification.advice.append("Lower the memory it needs (batch size, prefetch buffers, dataset caching) or raise the limit.")
    else:
        classification.summary = "SIGKILL: a kill that cannot be held or caught; its sender is not recorded"
        classification.evidence.append("no OOM kill was counted by its memory cgroup")
        classification.advice.append("Look for who sent it: a job scheduler's time or memory limit, a watchdog, `kill -9`; `dmesg` names the OOM killer's victims.")
    if peak:
        classification.evidence.append(f"peak memory {_mib(peak)}")
    classification.evidence.append("SIGKILL cannot be held: no core, no frames")


def _mib(n: int | None) -> str:
    return f"{(n or 0) / (1 << 20):.0f} MiB"
