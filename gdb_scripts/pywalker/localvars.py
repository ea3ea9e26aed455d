"""A frame's local variables, each as a short repr read from memory only (the walk asks for those
of the innermost frames): 3.10's fast locals, and 3.11+'s locals, cells and free variables."""

from __future__ import annotations

import struct

from .layout import STACKREF_INT_TAG, STACKREF_TAG_BITS, Layout
from .memory import Memory
from .objects import Objects, clip
from .target import ReadError

MAX_LOCALS = 256  # locals shown per frame (a corrupt count may be absurd)
# co_localspluskinds bits (Include/internal/pycore_code.h, 3.11+).
CO_FAST_CELL = 0x40
CO_FAST_FREE = 0x80


class Locals:
    """The locals of one frame at a time, name -> safe repr."""

    def __init__(self, mem: Memory, layout: Layout, obj: Objects) -> None:
        self.mem = mem
        self.L = layout
        self.obj = obj

    def of_310(self, frame: int, code: int) -> dict[str, str]:
        """The locals of a 3.10 frame object: f_localsplus, named by co_varnames."""
        L = self.L
        out: dict[str, str] = {}
        try:
            n = self.mem.i32(code + L["code.nlocals"])
            names = self.mem.ptr(code + L["code.varnames"])
            n = max(0, min(n, self.obj.var_size(names), MAX_LOCALS))
            for i in range(n):
                self._one(out, names, i, self.mem.ptr(frame + L["pyframe.localsplus"] + 8 * i), 0)
        except ReadError as e:
            out["<error>"] = clip(str(e))
        return out

    def of_311(self, frame: int, code: int) -> dict[str, str]:
        """The locals of a 3.11+ interpreter frame, named by co_localsplusnames: a cell's content
        for cell and free variables, a 3.14+ small int held in its tagged reference by its value."""
        L = self.L
        out: dict[str, str] = {}
        try:
            names = self.mem.ptr(code + L["code.localsplusnames"])
            n = self.obj.var_size(names)
            if L.has("code.nlocalsplus"):
                n = min(n, self.mem.i32(code + L["code.nlocalsplus"]))
            kinds, _ = self.obj.bytes_value(self.mem.ptr(code + L["code.localspluskinds"]), MAX_LOCALS)
            n = max(0, min(n, len(kinds), MAX_LOCALS))
            stackrefs = L.shape["refs"] == "stackref"
            for i in range(n):
                value = self.mem.ptr(frame + L["iframe.localsplus"] + 8 * i)
                if stackrefs and value & STACKREF_TAG_BITS == STACKREF_INT_TAG:
                    # A small int held in the reference itself, no object behind it.
                    out[self._name(names, i)] = str(struct.unpack("<q", struct.pack("<Q", value))[0] >> 2)
                    continue
                self._one(out, names, i, self.L.reference(value), kinds[i])
        except ReadError as e:
            out["<error>"] = clip(str(e))
        return out

    def _name(self, names: int, i: int) -> str:
        try:
            return self.obj.unicode(self.obj.tuple_item(names, i), 64)
        except ReadError:
            return f"<local {i}>"

    def _one(self, out: dict[str, str], names: int, i: int, value: int, kind: int) -> None:
        name = self._name(names, i)
        if not value:
            return  # unbound
        try:
            if kind & (CO_FAST_CELL | CO_FAST_FREE) and self.obj.type_name(value) == "cell":
                value = self.mem.ptr(value + self.L["cell.ref"])
                if not value:
                    return
            out[name] = self.obj.safe_repr(value)
        except ReadError:
            out[name] = f"<unreadable at 0x{value:x}>"
