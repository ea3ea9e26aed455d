"""The gdb stage: a hardened gdb process driven over GDB/MI (the Debugger protocol's implementation),
and what it reads from a core."""

from __future__ import annotations

from coreanalyze.gdb.collect import GdbAnalysis, abort_message, collect, demangle, read_memory
from coreanalyze.gdb.session import GdbSession, mi_quote

__all__ = ["GdbAnalysis", "GdbSession", "abort_message", "collect", "demangle", "mi_quote", "read_memory"]
