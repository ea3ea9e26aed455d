"""The limits the analyses run under, set on the watcher itself so that every process it starts
(batch's worker, gdb, the shrinking children) inherits them: a lower CPU priority and a soft
address-space limit. gdb gets its own address-space limit on top (gdb/session.py); a cgroup's
(the systemd unit's MemoryMax=, CPUQuota=) bounds all of them together."""

from __future__ import annotations

import os
import resource

from coreanalyze.base.errors import BadInput


def lower_priority(niceness: int) -> None:
    """Raise this process's niceness to `niceness` (never lower it: an unprivileged process
    could not, and a service manager's Nice= may already be higher)."""
    current = os.getpriority(os.PRIO_PROCESS, 0)
    if niceness > current:
        os.nice(niceness - current)


def limit_memory(size: int | None) -> None:
    """The soft RLIMIT_AS; the hard limit stays, so that gdb's own limit can still be set."""
    if size is None:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY and size > hard:
        raise BadInput(f"--memory-limit {size}: above this process's hard limit ({hard})")
    resource.setrlimit(resource.RLIMIT_AS, (size, hard))


SUFFIXES = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str, option: str) -> int:
    """"500M", "20G", "1048576" -> bytes (binary units, as systemd's MemoryMax= reads them)."""
    value = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = value[-1:] if value[-1:] in SUFFIXES and not value[-1:].isdigit() else ""
    number = value[: len(value) - len(unit)]
    try:
        size = int(float(number) * SUFFIXES[unit])
    except ValueError:
        raise BadInput(f"{option} {text!r}: not a size (e.g. 500M, 20G)") from None
    if size <= 0:
        raise BadInput(f"{option} {text!r}: must be more than 0")
    return size
