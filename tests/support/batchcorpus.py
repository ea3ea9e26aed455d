"""A directory of real cores as a server collects them (plain, systemd-coredump's compressed
and attributed files, a duplicate, a corrupt file, files that are not cores), and what a batch
must find in it."""

from __future__ import annotations

import lzma
import os
import re
from datetime import datetime, timezone
from pathlib import Path

import lz4.frame
import zstandard

from support.corecache import C_CRASHERS
from support.coregen import run_to_core

BOOT_ID = "3f2c9a1e0b7d4c55a1e2f3a4b5c6d7e8"
REPORT_NAME = re.compile(r"^reports/[A-Za-z0-9][A-Za-z0-9._+-]*-[0-9a-f]{16}\.(html|json)$")
# Crash time written into the systemd attributes (µs since the epoch).
DIVZERO_USEC = 1_700_000_000_000_000
UD2_USEC = 1_700_000_500_000_000


def _set_xattrs(path: Path, values: dict[str, str]) -> bool:
    """systemd-coredump's attributes on a file; False when this file system has none."""
    try:
        for key, value in values.items():
            os.setxattr(path, f"user.coredump.{key}", value.encode())
    except OSError:
        return False
    return True


def _systemd_name(comm: str, pid: int, usec: int, suffix: str) -> str:
    return f"core.{comm}.1000.{BOOT_ID}.{pid}.{usec}.{suffix}"


def _iso(usec: int) -> str:
    return datetime.fromtimestamp(usec / 1e6, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def crash_again(cores, name: str, run: int):
    """Another real crash of the same program: a different core with the same signature."""
    first = cores.c_crash(name)
    workdir = first.workdir.parent / f"{name}-again-{run}"
    _, _, sig = C_CRASHERS[name]
    return run_to_core(f"{name}-{run}", [str(first.exe)], workdir, kill_after_ready=sig)


class Corpus:
    """A directory of cores as a server collects them, and what a batch must find in it."""

    def __init__(self, root: Path, cores):
        self.root = root
        plain = root / "host-a"
        coredump = root / "coredump"
        plain.mkdir(parents=True)
        coredump.mkdir()
        self.plain_dir, self.coredump_dir = plain, coredump

        # Three crashes of one program: three different cores, one group.
        null_cases = [cores.c_crash("null_thread"), crash_again(cores, "null_thread", 1), crash_again(cores, "null_thread", 2)]
        for i, case in enumerate(null_cases):
            sub = plain / f"run{i}"  # the same kernel name could repeat in another directory
            sub.mkdir()
            _copy(case.core, sub / case.core.name)
        self.null_cores = [plain / f"run{i}" / c.core.name for i, c in enumerate(null_cases)]
        self.null_program = null_cases[0].exe

        double_free = cores.c_crash("double_free")
        killed = cores.c_crash("killed")
        _copy(double_free.core, plain / double_free.core.name)
        _copy(killed.core, plain / killed.core.name)
        self.double_free = plain / double_free.core.name
        self.killed = plain / killed.core.name

        # systemd-coredump's way: compressed, named core.COMM.UID.BOOTID.PID.USEC.EXT, attributes.
        divzero, ud2 = cores.c_crash("divzero"), cores.c_crash("ud2")
        self.divzero = coredump / _systemd_name("divzero", divzero.pid or 101, DIVZERO_USEC, "zst")
        self.divzero.write_bytes(zstandard.ZstdCompressor(level=3).compress(divzero.core.read_bytes()))
        self.ud2 = coredump / _systemd_name("ud2", ud2.pid or 102, UD2_USEC, "lz4")
        self.ud2.write_bytes(lz4.frame.compress(ud2.core.read_bytes()))
        self.xattrs = _set_xattrs(self.divzero, {"hostname": "web-1", "timestamp": str(DIVZERO_USEC), "pid": str(divzero.pid or 101), "signal": "8", "exe": str(divzero.exe)})
        self.xattrs &= _set_xattrs(self.ud2, {"hostname": "web-2", "timestamp": str(UD2_USEC)})

        # The same double-free core again, xz-compressed: one crash, counted once.
        self.double_free_copy = coredump / _systemd_name("double_free", double_free.pid or 103, DIVZERO_USEC + 7, "xz")
        self.double_free_copy.write_bytes(lzma.compress(double_free.core.read_bytes(), preset=1))

        # A corrupt core: the batch reports it and goes on.
        self.corrupt = plain / "core.4242"
        self.corrupt.write_bytes(b"\x7fELF" + os.urandom(3000))

        # Not cores: must be left alone.
        (plain / "README.txt").write_text("cores from host-a\n")
        (plain / "core.29913.html").write_text("<p>an old report</p>\n")

        self.files = [*self.null_cores, self.double_free, self.killed, self.divzero, self.ud2, self.double_free_copy, self.corrupt]
        self.arguments = [str(plain), str(coredump / "core.*")]


def _copy(src: Path, dst: Path) -> None:
    dst.write_bytes(src.read_bytes())
