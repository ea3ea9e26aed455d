"""Python frames of every thread of a core, read by the CPython walker (pywalker/) inside gdb.

Sourced into gdb (`source pystacks.py`), this registers the MI command

    -coreanalyze-pystacks [--locals] [--locals-tid TID] [--locals-frames N]
                          [--python-version 3.X] [--runtime ADDRESS] [--show-layout]

whose result is `^done,format="coreanalyze-pystacks/1",json="{...}"`: one JSON document (ASCII
only, so MI quoting cannot mangle it) with the interpreter version, every Python thread (its
LWP, whether it holds the GIL, its frames innermost first, each with the index of the
`_PyEval_EvalFrameDefault` activation that runs it) and warnings.

This file is the walker's gdb-hosted `Target`: memory, symbols, DWARF type offsets and threads
as gdb sees them. The walk itself is debugger-neutral and lives in the package pywalker/ beside it.
"""

from __future__ import annotations

import json
import os
import sys

import gdb  # type: ignore[import-not-found]  # only exists inside gdb

# gdb runs this file as a script: its directory holds the walker package (pywalker/).
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from pywalker import COMMAND, FORMAT, ReadError, UnknownArgument, parse_args, walk  # noqa: E402


def _find_field(t, name: str):
    """(byte offset, type) of a named member, looking into anonymous structs/unions."""
    t = t.strip_typedefs()
    for f in t.fields():
        if f.name == name:
            return f.bitpos // 8, f.type
        if not f.name and f.type is not None:
            try:
                off, ft = _find_field(f.type, name)
            except KeyError:
                continue
            return f.bitpos // 8 + off, ft
    raise KeyError(name)


def _dwarf_offset(type_name: str, path: str | None, block) -> int:
    t = gdb.lookup_type(type_name, block) if block is not None else gdb.lookup_type(type_name)
    if path is None:
        return t.strip_typedefs().sizeof
    total = 0
    for part in path.split("."):
        off, t = _find_field(t, part)
        total += off
    return total


class GdbTarget:
    """The walker's view of the selected inferior, through gdb's Python API."""

    def __init__(self) -> None:
        self._inferior = gdb.selected_inferior()

    def read(self, address: int, size: int) -> bytes:
        try:
            return bytes(self._inferior.read_memory(address, size))
        except (gdb.MemoryError, gdb.error, OverflowError, ValueError):
            raise ReadError(f"cannot read {size} bytes at 0x{address:x}") from None

    def symbol_address(self, name: str) -> int | None:
        try:
            value = gdb.parse_and_eval(f"(unsigned long)&'{name}'")
            return int(value)
        except (gdb.error, RuntimeError, ValueError, OverflowError):
            return None

    def object_files(self) -> list[str]:
        try:
            return [o.filename or "" for o in gdb.objfiles()]
        except gdb.error:
            return []

    def type_offsets(self, spec: dict[str, tuple[str, str | None]], near: int) -> dict[str, int]:
        try:
            block = gdb.block_for_pc(near)
        except (gdb.error, RuntimeError):
            block = None
        if block is None:
            # No DWARF for the interpreter itself: types found elsewhere (an extension built
            # with -g against other headers) would describe some other Python.
            return {}
        out: dict[str, int] = {}
        for key, (type_name, path) in spec.items():
            try:
                out[key] = _dwarf_offset(type_name, path, block)
            except (gdb.error, KeyError, RuntimeError, TypeError):
                continue
        return out

    def thread_lwps(self) -> list[int]:
        try:
            return [t.ptid[1] for t in self._inferior.threads() if t.ptid[1]]
        except gdb.error:
            return []

    def pid(self) -> int | None:
        return self._inferior.pid or None


class PyStacksCommand(gdb.MICommand):
    """-coreanalyze-pystacks: Python frames of every thread, as one JSON document."""

    def __init__(self) -> None:
        super().__init__("-" + COMMAND)

    def invoke(self, argv):
        try:
            options = parse_args(list(argv))
        except UnknownArgument as e:
            raise gdb.GdbError(f"-{COMMAND}: {e}") from None
        except (StopIteration, ValueError):
            raise gdb.GdbError(f"-{COMMAND}: bad arguments {' '.join(argv)!r}") from None
        try:
            result = walk(GdbTarget(), options)
        except Exception as e:  # noqa: BLE001 - a broken core must never break gdb's session
            failure = f"Python frame walk failed: {type(e).__name__}: {e}"
            result = {"format": FORMAT, "threads": [], "warnings": [failure]}
        return {"format": FORMAT, "json": json.dumps(result, ensure_ascii=True, separators=(",", ":"))}


try:
    PyStacksCommand()
except RuntimeError:
    pass  # already registered by an earlier `source` of this file
