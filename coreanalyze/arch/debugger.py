"""Which gdb can read a core: the one asked for, or gdb-multiarch for another architecture.

A distribution's plain `gdb` reads only its own machine's cores; `gdb-multiarch` (Debian,
Ubuntu) reads any. Whether a gdb knows an architecture is asked of the gdb itself
(`set architecture NAME` fails for one it was built without), once per gdb and architecture.
"""

from __future__ import annotations

import functools
import shutil
import subprocess

from coreanalyze.arch import architecture, host_architecture
from coreanalyze.base.errors import BadInput

MULTIARCH_GDB = "gdb-multiarch"
DEFAULT_GDB = "gdb"
_PROBE_TIMEOUT = 30.0


def gdb_for_core(requested: str, arch: str) -> str:
    """The gdb to read a core of `arch` with; BadInput (one line) when none here can.

    A core of this machine's architecture keeps the requested gdb (its absence is reported
    where gdb is started). For another architecture an explicit --gdb is used when it knows
    the architecture; the default tries gdb-multiarch, then gdb.
    """
    if arch == host_architecture():
        return requested
    known = architecture(arch)
    gdb_name = known.gdb_name if known else arch
    explicit = requested != DEFAULT_GDB
    for candidate in [requested] if explicit else [MULTIARCH_GDB, DEFAULT_GDB]:
        path = shutil.which(candidate)
        if path and reads_architecture(path, gdb_name):
            return candidate
    if explicit:  # the user's choice: say it cannot, do not swap it for another
        raise BadInput(f"the core is from an {arch} machine and --gdb {requested} cannot read it; pass a gdb built for {arch} (such as {MULTIARCH_GDB})")
    raise BadInput(f"the core is from an {arch} machine and no gdb here can read it; install {MULTIARCH_GDB} or pass --gdb PATH")


@functools.lru_cache(maxsize=None)
def reads_architecture(gdb_path: str, gdb_architecture: str) -> bool:
    """Whether this gdb was built with support for the architecture."""
    try:
        done = subprocess.run(
            [gdb_path, "-nx", "-batch", "-ex", f"set architecture {gdb_architecture}"],
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and "Undefined item" not in done.stderr and "not found" not in done.stderr
