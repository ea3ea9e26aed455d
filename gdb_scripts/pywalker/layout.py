"""The layout a process is read with: its version's offsets and shape, from the interpreter's own
_Py_DebugOffsets (3.13+), its DWARF types where the target reads them, and the tables."""

from __future__ import annotations

from .debugoffsets import DebugOffsets, read_debug_offsets
from .memory import Memory
from .tables import BUILD_TABLES, SHAPES, TABLES, dwarf_spec
from .target import ReadError, Target
from .version import dotted, hex_version, version_from_names

# A _PyStackRef (3.14+) is a pointer with its low two bits as tags, or, with both bits set, a
# small int shifted left by two (Include/internal/pycore_stackref.h).
STACKREF_TAG_BITS = 3
STACKREF_INT_TAG = 3


class Layout:
    """The offsets ("struct.field" -> bytes) and shape one interpreter is read with, and where
    the offsets came from (source: "table", "dwarf" or "debug-offsets")."""

    def __init__(self, version: tuple[int, ...], offsets: dict[str, int], source: str,
                 free_threaded: bool = False, shape_of: tuple[int, int] | None = None) -> None:  # fmt: skip
        self.version = version
        self.minor = tuple(version[:2])
        self.off = offsets
        self.shape = SHAPES[shape_of or self.minor]
        self.source = source
        self.free_threaded = free_threaded
        self.dwarf: dict[str, int] = {}  # what the interpreter's DWARF says, when it has some
        self.debug_offsets: dict[str, int] = {}  # what _Py_DebugOffsets says (3.13+)

    def __getitem__(self, key: str) -> int:
        return self.off[key]

    def has(self, key: str) -> bool:
        return key in self.off

    def reference(self, word: int) -> int:
        """The object a frame's reference word points at (3.14+ tags a _PyStackRef's low bits)."""
        return word & ~STACKREF_TAG_BITS if self.shape["refs"] == "stackref" else word


def dwarf_layout(
    target: Target, version: tuple[int, int], eval_address: int | None, free_threaded: bool = False
) -> dict[str, int]:
    """Offsets from the interpreter's own DWARF types, as the target reads them; {} when none."""
    spec = dwarf_spec(version, free_threaded)
    if not spec or eval_address is None:
        return {}
    return target.type_offsets(spec, eval_address)


def tabled_layout(minor: tuple[int, int], free_threaded: bool) -> tuple[tuple[int, int], dict[str, int]]:
    """The tabled 3.13+ build nearest to (minor, free_threaded): itself, or the newest one before
    it (only interpreters with _Py_DebugOffsets, 3.13 and later, are asked for)."""
    known = sorted(v[:2] for v in BUILD_TABLES if v[2] == free_threaded)
    chosen = max((v for v in known if v <= minor), default=known[0])
    return chosen, dict(BUILD_TABLES[(*chosen, free_threaded)])


def choose_layout(
    target: Target,
    mem: Memory,
    runtime: int,
    hint: tuple[int, int] | None,
    warnings: list[str],
    prefer_hint: bool = False,
) -> Layout | None:
    """The layout of the interpreter whose runtime state is at `runtime`; None (and a warning)
    for a version the walker does not read. With prefer_hint the host's version wins over a
    Py_Version symbol: the host found the runtime itself, the symbol may be another build's."""
    eval_address = target.symbol_address("_PyEval_EvalFrameDefault")
    exported = read_debug_offsets(mem, runtime)
    if exported is not None:
        return _exported_layout(target, exported, eval_address, warnings)
    version: tuple[int, ...] | None = None
    if prefer_hint:
        version = hint
    if version is None:
        address = target.symbol_address("Py_Version")
        if address is not None:
            try:
                version = hex_version(mem.u32(address))
            except ReadError:
                version = None
    if version is None:
        version = hint or version_from_names(target)
    if version is None:
        warnings.append("cannot tell the Python version (no Py_Version, no libpython3.X); assuming 3.10")
        version = (3, 10)
    minor = tuple(version[:2])
    if minor not in TABLES or minor not in SHAPES:
        warnings.append(f"Python {dotted(version)} is not supported by the frame walker")
        return None
    offsets = dict(TABLES[minor])
    source = "table"
    derived = dwarf_layout(target, minor, eval_address)
    if derived:
        source = "dwarf"
        offsets.update(derived)
    layout = Layout(version, offsets, source)
    layout.dwarf = derived
    return layout


def _exported_layout(target: Target, exported: DebugOffsets, eval_address: int | None, warnings: list[str]) -> Layout:
    """The layout of a 3.13+ interpreter: its own _Py_DebugOffsets over the tabled layout of its
    build (and its DWARF, where the target reads it), which fill what the block does not export;
    the table alone where the block does not check out."""
    minor = exported.version[:2]
    tabled, offsets = tabled_layout(minor, exported.free_threaded)
    derived = dwarf_layout(target, tabled, eval_address, exported.free_threaded)
    offsets.update(derived)
    if exported.read_as != minor:
        warnings.append(
            f"Python {dotted(exported.version)} is newer than the frame walker's layouts:"
            f" read as {dotted(exported.read_as)}, as far as its structures are unchanged"
        )
    if exported.problem:
        build = dotted(tabled) + ("t" if exported.free_threaded else "")
        warnings.append(
            f"the interpreter's own structure offsets (_Py_DebugOffsets) are damaged ({exported.problem});"
            f" read with CPython {build}'s tabled layout"
        )
        source = "dwarf" if derived else "table"
    else:
        offsets.update(exported.offsets)
        source = "debug-offsets"
    layout = Layout(exported.version, offsets, source, exported.free_threaded, shape_of=tabled)
    layout.dwarf = derived
    layout.debug_offsets = exported.offsets
    return layout
