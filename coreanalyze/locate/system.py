"""The system's settings that decide where a crashing process's core goes, read from one root.

Every path the finder reads (the kernel's core_pattern and core_uses_pid, systemd-coredump's and
apport's directories, apport's log) is taken under `root`, which is `/` except where the
environment variable COREANALYZE_SYSTEM_ROOT names another directory. That variable exists for
the tests, which cannot change the real /proc/sys/kernel/core_pattern: they lay out a directory
with the same paths (proc/sys/kernel/core_pattern, var/crash, ...) and point the variable at it.
Nothing read there ever chooses a path to write to.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ROOT_VARIABLE = "COREANALYZE_SYSTEM_ROOT"
MAX_PATTERN = 4096  # the kernel's own limit on core_pattern is 128 bytes (CORENAME_MAX_SIZE)


@dataclass(frozen=True)
class SystemPaths:
    root: Path = Path("/")

    @classmethod
    def from_environment(cls) -> SystemPaths:
        return cls(Path(os.environ.get(ROOT_VARIABLE) or "/"))

    def at(self, absolute: str) -> Path:
        """`absolute` (a path on the system) under this root."""
        return self.root / absolute.lstrip("/")

    def _read(self, absolute: str) -> str | None:
        try:
            with open(self.at(absolute), encoding="utf-8", errors="replace") as f:
                return f.read(MAX_PATTERN)
        except OSError:
            return None

    def core_pattern(self) -> str | None:
        text = self._read("/proc/sys/kernel/core_pattern")
        return text.strip("\n") if text is not None else None

    def core_uses_pid(self) -> bool:
        return (self._read("/proc/sys/kernel/core_uses_pid") or "0").strip() == "1"

    @property
    def systemd_store(self) -> Path:
        return self.at("/var/lib/systemd/coredump")

    @property
    def apport_reports(self) -> Path:
        return self.at("/var/crash")

    @property
    def apport_cores(self) -> Path:
        return self.at("/var/lib/apport/coredump")

    @property
    def apport_log(self) -> Path:
        return self.at("/var/log/apport.log")
