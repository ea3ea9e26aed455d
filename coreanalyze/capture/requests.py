"""What the watcher asks of the reporter, and what it answers: plain data that crosses a pipe
between the two processes as one JSON line each."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields


@dataclass
class CrashRequest:
    """One process that died, or is held at its fatal signal: report it."""

    pid: int
    argv: list[str] = field(default_factory=list)
    core: str | None = None  # the core written at its fatal signal (None: none could be)
    signal: int | None = None
    handler_ran: bool = False  # the program's own handler got the signal first
    core_problem: str | None = None  # why the core is incomplete or missing
    died: int | None = None  # its wait status, when it is already dead
    killed: bool = False  # died of SIGKILL, which no one can hold
    oom_kills: int | None = None  # OOM kills the memory cgroup counted while it ran
    cgroup_peak: int | None = None
    cgroup_limit: int | None = None
    peak_rss: int | None = None  # bytes, when it was last seen
    out_dir: str = "."

    def to_line(self) -> bytes:
        return json.dumps(asdict(self)).encode() + b"\n"

    @classmethod
    def from_line(cls, line: bytes) -> CrashRequest:
        return cls(**_known_fields(cls, json.loads(line)))


@dataclass
class CrashReply:
    pid: int
    verdict: str = ""  # the one line for stderr
    html: str | None = None
    json: str | None = None
    error: str | None = None

    def to_line(self) -> bytes:
        return json.dumps(asdict(self)).encode() + b"\n"

    @classmethod
    def from_line(cls, line: bytes) -> CrashReply:
        return cls(**_known_fields(cls, json.loads(line)))


def _known_fields(cls, data: dict) -> dict:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}
