"""Python objects read from memory: type names (also where the names themselves are not in the
core), str, bytes, tuples, code objects, and short, safe reprs of a frame's locals."""

from __future__ import annotations

import struct

from .layout import Layout
from .memory import Memory
from .target import ReadError

# Limits: a corrupt core may make any count or length absurd.
MAX_LINETABLE = 1 << 18  # bytes of one code object's line table
MAX_NAME_CHARS = 1024  # function names, file names
MAX_REPR = 120  # characters of one local's repr
SHORT_TEXT = 64  # characters of a str read with its header in one read (unicode)

# Py_TPFLAGS_*_SUBCLASS (Include/object.h): every built-in type of these and its subclasses
# carry one; how types are told apart when their names cannot be read.
SUBCLASS_FLAGS = (
    (1 << 24, "int"),
    (1 << 25, "list"),
    (1 << 26, "tuple"),
    (1 << 27, "bytes"),
    (1 << 28, "str"),
    (1 << 29, "dict"),
    (1 << 31, "type"),
)
TPFLAGS_HEAPTYPE = 1 << 9
# The name of a type whose tp_name is unreadable and that no flag or structure identified.
UNNAMED_TYPE = "?"
# The "type" of an object whose type pointer leads to something that is no type object.
NOT_A_TYPE = "<not a type>"


class Objects:
    """Reads Python objects (type names, str, bytes, tuples, code objects) from memory."""

    def __init__(self, mem: Memory, layout: Layout) -> None:
        self.mem = mem
        self.L = layout
        self._type_names: dict[int, str] = {}
        self._codes: dict[int, dict] = {}

    def type_name(self, obj: int) -> str:
        tp = self.mem.ptr(obj + self.L["object.type"])
        name = self._type_names.get(tp)
        if name is None:
            name = self.mem.cstring(self.mem.ptr(tp + self.L["type.name"]), 128) or self._name_by_flags(tp)
            self._type_names[tp] = name
        return name

    def _name_by_flags(self, tp: int) -> str:
        """The name of a built-in type whose tp_name is unreadable, from its subclass flag.

        tp_name points into the interpreter's read-only data, which a core does not hold:
        without the interpreter's file the names are gone, but the type objects themselves
        (writable data) are in the core. A type carrying a flag whose base does not is the
        built-in type itself; bool is the one static type built on int.
        """
        try:
            if not self._is_type_object(tp):
                return NOT_A_TYPE
            flags = self.mem.u64(tp + self.L["type.flags"])
            for bit, name in SUBCLASS_FLAGS:
                if not flags & bit:
                    continue
                base = self.mem.ptr(tp + self.L["type.base"])
                if not base or not self.mem.u64(base + self.L["type.flags"]) & bit:
                    return name
                if name == "int" and not flags & TPFLAGS_HEAPTYPE and self._name_by_flags(base) == "int":
                    return "bool"
                return UNNAMED_TYPE
        except ReadError:
            return NOT_A_TYPE
        except KeyError:
            pass
        return UNNAMED_TYPE

    def _is_type_object(self, tp: int) -> bool:
        """Whether tp is an object of a type whose own type is `type` (the type of `type` is
        `type` itself): a damaged object's type pointer into garbage is not."""
        meta = self.mem.ptr(tp + self.L["object.type"])
        for _ in range(3):
            above = self.mem.ptr(meta + self.L["object.type"])
            if above == meta:
                return True
            meta = above
        return False

    def learn_type(self, obj: int, name: str) -> None:
        """Name the type of obj, whose tp_name is unreadable, after its structure checked out."""
        tp = self.mem.ptr(obj + self.L["object.type"])
        if self._type_names.get(tp) == UNNAMED_TYPE:
            self._type_names[tp] = name

    def _looks_like_code(self, addr: int) -> bool:
        """A code object by its fields: its name and file name are str, its line table bytes."""
        L = self.L
        try:
            return (
                self.type_name(self.mem.ptr(addr + L["code.name"])) == "str"
                and self.type_name(self.mem.ptr(addr + L["code.filename"])) == "str"
                and self.type_name(self.mem.ptr(addr + L["code.linetable"])) == "bytes"
            )
        except ReadError:
            return False

    def var_size(self, obj: int) -> int:
        return self.mem.i64(obj + self.L["var.size"])

    def unicode(self, obj: int, limit: int = MAX_NAME_CHARS) -> str:
        L = self.L
        short = self._short_ascii(obj, limit)
        if short is not None:
            return short
        length = self.mem.i64(obj + L["unicode.length"])
        if length < 0 or length > 1 << 40:
            raise ReadError(f"absurd str length {length}")
        state = self.mem.u32(obj + L["unicode.state"])
        kind = (state >> L["unicode.kind_bit"]) & 7
        compact = (state >> L["unicode.compact_bit"]) & 1
        ascii_only = (state >> L["unicode.ascii_bit"]) & 1
        if kind not in (1, 2, 4):
            raise ReadError(f"str of unknown kind {kind}")
        if compact:
            data = obj + (L["unicode.ascii_size"] if ascii_only else L["unicode.compact_size"])
        else:
            data = self.mem.ptr(obj + L["unicode.data_any"])
        count = min(length, limit)
        raw = self.mem.read(data, count * kind)
        codec = {1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[kind]
        text = raw.decode(codec, "replace")
        return text + ("..." if count < length else "")

    def _short_ascii(self, obj: int, limit: int) -> str | None:
        """unicode() of a compact ASCII str of up to SHORT_TEXT characters (module names,
        attribute names) in one read of header and text; None for any other (unicode() then
        reads it field by field, and raises what it raises)."""
        L = self.L
        text_at = L["unicode.ascii_size"]
        try:
            head = self.mem.read(obj, text_at + SHORT_TEXT)
        except ReadError:
            return None
        length = struct.unpack_from("<q", head, L["unicode.length"])[0]
        state = struct.unpack_from("<I", head, L["unicode.state"])[0]
        if (
            not 0 <= length <= SHORT_TEXT
            or (state >> L["unicode.kind_bit"]) & 7 != 1
            or not (state >> L["unicode.compact_bit"]) & 1
            or not (state >> L["unicode.ascii_bit"]) & 1
        ):
            return None
        count = min(length, limit)
        return head[text_at : text_at + count].decode("latin-1", "replace") + ("..." if count < length else "")

    def bytes_value(self, obj: int, limit: int) -> tuple[bytes, int]:
        size = self.var_size(obj)
        if size < 0 or size > 1 << 40:
            raise ReadError(f"absurd bytes size {size}")
        return self.mem.read(obj + self.L["bytes.sval"], min(size, limit)), size

    def tuple_item(self, obj: int, i: int) -> int:
        return self.mem.ptr(obj + self.L["tuple.items"] + 8 * i)

    def code(self, addr: int) -> dict:
        """filename/name/qualname/firstlineno/linetable of a code object, cached per address."""
        cached = self._codes.get(addr)
        if cached is not None:
            return cached
        L = self.L
        tname = self.type_name(addr)
        if tname != "code":
            if tname != UNNAMED_TYPE or not self._looks_like_code(addr):
                raise ReadError(f"0x{addr:x} is not a code object")
            self.learn_type(addr, "code")
        name = self.unicode(self.mem.ptr(addr + L["code.name"]))
        qualname = name
        if L.has("code.qualname"):
            try:
                qualname = self.unicode(self.mem.ptr(addr + L["code.qualname"]))
            except ReadError:
                pass
        try:
            filename = self.unicode(self.mem.ptr(addr + L["code.filename"]))
        except ReadError:
            filename = None
        firstlineno = self.mem.i32(addr + L["code.firstlineno"])
        try:
            table, _ = self.bytes_value(self.mem.ptr(addr + L["code.linetable"]), MAX_LINETABLE)
        except ReadError:
            table = None
        info = {
            "name": name,
            "qualname": qualname,
            "filename": filename,
            "firstlineno": firstlineno,
            "linetable": table,
        }
        self._codes[addr] = info
        return info

    # ---------------------------------------------------------------- safe reprs

    def int_value(self, obj: int) -> int | None:
        """Value of a small int (up to 4 digits of 30 bits); None for bigger ones."""
        if self.L.shape["long"] == "lv_tag":
            tag = self.mem.u64(obj + self.L["var.size"])
            ndigits = tag >> 3
            sign = {0: 1, 1: 0, 2: -1}.get(tag & 3, 1)
        else:
            size = self.var_size(obj)
            ndigits = abs(size)
            sign = (size > 0) - (size < 0)
        if ndigits > 4:
            return None
        raw = self.mem.read(obj + self.L["long.digits"], 4 * ndigits) if ndigits else b""
        value = 0
        for k in range(ndigits - 1, -1, -1):
            value = (value << 30) | (struct.unpack_from("<I", raw, 4 * k)[0] & ((1 << 30) - 1))
        return sign * value

    def safe_repr(self, obj: int) -> str:
        """A short description of a value, read from memory only."""
        if obj == 0:
            return "<NULL>"
        tname = self.type_name(obj)
        if tname == "NoneType":
            return "None"
        if tname == "bool":
            v = self.int_value(obj)
            return "True" if v else "False"
        if tname == "int":
            v = self.int_value(obj)
            return str(v) if v is not None else "<int with more than 120 bits>"
        if tname == "float":
            return repr(struct.unpack("<d", self.mem.read(obj + self.L["float.value"], 8))[0])
        if tname == "str":
            text = self.unicode(obj, MAX_REPR)
            return clip(repr(text))
        if tname == "bytes":
            data, size = self.bytes_value(obj, MAX_REPR)
            r = repr(data)
            return clip(r if size <= len(data) else r + f"... ({size} bytes)")
        if tname in ("list", "tuple"):
            n = self.var_size(obj)
            return f"<{tname} of {n} items>"
        if tname == "dict":
            n = self.mem.i64(obj + self.L["dict.used"])
            return f"<dict of {n} items>"
        return f"<{clip(tname, 60)} object at 0x{obj:x}>"


def clip(text: str, limit: int = MAX_REPR) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
