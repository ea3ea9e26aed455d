"""What the process had imported: the top-level modules in sys.modules with their __file__ and
__version__, read from the interpreter's dicts as CPython itself lays them out."""

from __future__ import annotations

import struct
from typing import NamedTuple

from .memory import MAX_READ
from .objects import MAX_NAME_CHARS, UNNAMED_TYPE
from .target import ReadError
from .walker import Walker

# Limits: a corrupt core may make any count or length absurd.
MAX_DICT_ENTRIES = 1 << 17  # entries of one dict (sys.modules, a module's namespace)
MAX_IMPORTS = 4096  # top-level modules reported
MAX_VERSION_CHARS = 64
INTERP_SCAN_BYTES = 16384  # how far into the interpreter state sys.modules is looked for

# PyDictKeysObject (Objects/dict-common.h in 3.10, Include/internal/pycore_dict.h later):
# 3.10: dk_refcnt, dk_size, dk_lookup, dk_usable, dk_nentries, dk_indices[] (index width from
# dk_size), entries {hash, key, value}. 3.11+: dk_refcnt, u8 dk_log2_size, u8
# dk_log2_index_bytes, u8 dk_kind, u32 dk_version, dk_usable, dk_nentries, dk_indices[];
# entries {hash, key, value} for general keys, {key, value} for str-only keys.
DICT_KEYS_GENERAL = 0
DICT_KEYS_UNICODE = 1
# What a module's namespace is read for (Imports).
MODULE_ATTRIBUTES = ("__file__", "__version__")


class DictTable(NamedTuple):
    """Where a combined-table dict's keys lie (Imports.dict_table)."""

    size: int  # slots of the index table (a power of two)
    width: int  # bytes of one index slot
    indices: int  # address of the index table
    entries: int  # address of the entries, in insertion order
    entry_size: int
    nentries: int  # entries used (deleted ones included)
    hashed: bool  # each entry starts with the key's hash (3.10, and 3.11+ general tables)


class Imports:
    """Top-level modules in sys.modules with their __file__ and __version__, read from memory."""

    def __init__(self, walker: Walker) -> None:
        self.mem = walker.mem
        self.L = walker.L
        self.obj = walker.obj
        self.warnings = walker.warnings
        self._names: dict[int, str | None] = {}  # str object -> text (short keys only)
        # A wanted attribute name -> (its str object, its hash), learned from the first module
        # whose namespace is scanned and holds it: the process's str hashes are salted, so they
        # are taken from its own memory. Later modules are then looked up by hash.
        self._keys: dict[str, tuple[int, int]] = {}

    def dict_table(self, d: int) -> DictTable | None:
        """The layout of a combined-table dict's keys (checked for sanity); None for a split one."""
        mem, L = self.mem, self.L
        keys = mem.ptr(d + L["dict.keys"])
        if mem.ptr(d + L["dict.values"]):
            return None  # split table: instance dicts, never sys.modules or a module's namespace
        if self.L.minor == (3, 10):
            size = mem.i64(keys + 8)
            if size <= 0 or size & (size - 1) or size > 1 << 30:
                raise ReadError(f"dict keys 0x{keys:x}: absurd size {size}")
            width = 1 if size <= 0xFF else 2 if size <= 0xFFFF else 4
            table = DictTable(size, width, keys + 40, keys + 40 + size * width, 24, mem.i64(keys + 32), True)
        else:
            head = mem.read(keys + 8, 24)
            log2_size, log2_index_bytes, kind = head[0], head[1], head[2]
            if log2_size > 30 or log2_index_bytes > 33 or kind not in (DICT_KEYS_GENERAL, DICT_KEYS_UNICODE):
                raise ReadError(f"dict keys 0x{keys:x}: not a combined table")
            size, hashed = 1 << log2_size, kind == DICT_KEYS_GENERAL
            nentries = struct.unpack_from("<q", head, 16)[0]
            width = (1 << log2_index_bytes) >> log2_size
            table = DictTable(size, width, keys + 32, keys + 32 + (1 << log2_index_bytes), 24 if hashed else 16, nentries, hashed)
        if table.nentries < 0 or table.nentries > size or table.nentries > MAX_DICT_ENTRIES:
            raise ReadError(f"dict keys 0x{keys:x}: absurd entry count {table.nentries}")
        return table

    def dict_items(self, d: int) -> list[tuple[int, int]]:
        """(key, value) pointers of a combined-table dict; [] for a split one."""
        table = self.dict_table(d)
        if table is None:
            return []
        entry_size, nentries = table.entry_size, table.nentries
        key_at = 8 if table.hashed else 0  # after me_hash
        raw = b""
        for start in range(0, nentries * entry_size, MAX_READ - MAX_READ % entry_size):
            raw += self.mem.read(table.entries + start, min(MAX_READ - MAX_READ % entry_size, nentries * entry_size - start))
        out = []
        for i in range(nentries):
            key, value = struct.unpack_from("<QQ", raw, i * entry_size + key_at)
            if key and value:
                out.append((key, value))
        return out

    def short_name(self, key: int, lengths: tuple[int, ...]) -> str | None:
        """The text of a str key when its length is one of `lengths` (one read otherwise)."""
        if key in self._names:
            return self._names[key]
        text = None
        try:
            if self.mem.i64(key + self.L["unicode.length"]) in lengths and self.obj.type_name(key) == "str":
                text = self.obj.unicode(key, max(lengths))
        except ReadError:
            text = None
        self._names[key] = text
        return text

    def find_modules_dict(self, interp: int) -> int | None:
        """sys.modules of an interpreter: at its known offset when that checks out, else the
        dict the interpreter state points to that maps "sys" and "builtins" to modules."""
        if self.L.has("interp.modules"):
            try:
                d = self.mem.ptr(interp + self.L["interp.modules"])
                if self._is_modules_dict(d):
                    return d
            except ReadError:
                pass
        try:
            block = self.mem.read(interp, INTERP_SCAN_BYTES)
        except ReadError:
            block = self.mem.read(interp, 4096)
        for (d,) in struct.iter_unpack("<Q", block):
            if d < 4096 or d & 7:
                continue
            try:
                if self._is_modules_dict(d):
                    return d
            except ReadError:
                continue
        return None

    def _is_modules_dict(self, d: int) -> bool:
        if not d or self.obj.type_name(d) != "dict":
            return False
        found: dict[str, int] = {}
        for key, value in self.dict_items(d):
            name = self.short_name(key, (3, 8))
            if name in ("sys", "builtins") and self.obj.type_name(value) in ("module", UNNAMED_TYPE):
                found[name] = value
                if len(found) == 2:
                    break  # keys are unique; both come first in sys.modules (of thousands)
        if set(found) != {"sys", "builtins"}:
            return False
        sys_module, builtins = found["sys"], found["builtins"]
        if self.obj.type_name(sys_module) == "module":
            return True
        # Type names unreadable: sys and builtins of one type, each with a namespace dict, name
        # that type "module" for the entries that follow.
        same = self.mem.ptr(sys_module + self.L["object.type"]) == self.mem.ptr(builtins + self.L["object.type"])
        if same and all(self.obj.type_name(self.mem.ptr(m + self.L["module.dict"])) == "dict" for m in (sys_module, builtins)):
            self.obj.learn_type(sys_module, "module")
            return True
        return False

    def top_level(self, interp: int) -> list[dict]:
        """Top-level modules, and the first-level modules of a namespace package (google has no
        __file__ and no version: google.protobuf has both, and it is what was installed)."""
        modules = self.find_modules_dict(interp)
        if modules is None:
            self.warnings.append("sys.modules not found in the interpreter state")
            return []
        out: list[dict] = []
        inner: list[tuple[str, int]] = []  # (name, module) of "a.b" modules, read if a is a namespace
        for key, module in self.dict_items(modules):
            if len(out) >= MAX_IMPORTS:
                self.warnings.append(f"more than {MAX_IMPORTS} top-level modules; the rest were skipped")
                break
            try:
                name = self.obj.unicode(key, 200)
                if name.count(".") > 1 or self.obj.type_name(module) != "module":
                    continue
                if "." in name:
                    inner.append((name, module))
                    continue
                out.append(self._module_entry(name, module))
            except ReadError as e:
                self.warnings.append(f"an entry of sys.modules is unreadable: {e}")
        namespaces = {e["name"] for e in out if e["file"] is None}
        for name, module in inner:
            if name.split(".", 1)[0] in namespaces and len(out) < MAX_IMPORTS:
                try:
                    out.append(self._module_entry(name, module))
                except ReadError as e:
                    self.warnings.append(f"an entry of sys.modules is unreadable: {e}")
        return out

    def _module_entry(self, name: str, module: int) -> dict:
        entry = {"name": name, "file": None, "version": None}
        namespace = self.mem.ptr(module + self.L["module.dict"])
        values = self._looked_up(namespace, MODULE_ATTRIBUTES)
        if values is None:
            values = self._scanned(namespace)
        for attribute, v in values.items():
            if self.obj.type_name(v) == "str":
                limit = MAX_NAME_CHARS if attribute == "__file__" else MAX_VERSION_CHARS
                entry["file" if attribute == "__file__" else "version"] = self.obj.unicode(v, limit)
        return entry

    def _scanned(self, namespace: int) -> dict[str, int]:
        """MODULE_ATTRIBUTES' values in a namespace, read entry by entry (and the keys found
        learned for _looked_up)."""
        values: dict[str, int] = {}
        for k, v in self.dict_items(namespace):
            attribute = self.short_name(k, (8, 11))
            if attribute in MODULE_ATTRIBUTES:
                values[attribute] = v
                if attribute not in self._keys:
                    key_hash = self.mem.i64(k + self.L["unicode.length"] + 8)  # PyASCIIObject.hash
                    if key_hash != -1:
                        self._keys[attribute] = (k, key_hash)
        return values

    def _looked_up(self, namespace: int, names: tuple[str, ...]) -> dict[str, int] | None:
        """The values of names in a namespace found as CPython's own lookup finds them (a few
        reads instead of one or two per entry: a module's namespace has dozens); None when a
        name's hash is not known yet or the table cannot be probed (the caller scans it)."""
        if any(n not in self._keys for n in names):
            return None
        try:
            table = self.dict_table(namespace)
            if table is None:
                return {}  # a split table: never a module's namespace (as dict_items)
            values = {}
            for n in names:
                value = self._probe(table, n)
                if value:
                    values[n] = value
            return values
        except ReadError:
            return None

    def _probe(self, table: DictTable, name: str) -> int:
        """The value of the str key `name` (0: absent), probing as CPython's lookdict does."""
        size, width, indices, entries, entry_size, nentries, hashed = table
        if width not in (1, 2, 4, 8):
            raise ReadError(f"dict index width {width}")
        known_key, key_hash = self._keys[name]
        mask = size - 1
        perturb = key_hash & 0xFFFFFFFFFFFFFFFF
        i = perturb & mask
        for _ in range(size):
            ix = int.from_bytes(self.mem.read(indices + i * width, width), "little", signed=True)
            if ix == -1:  # DKIX_EMPTY: not in the table
                return 0
            if ix >= nentries or ix < -2:
                raise ReadError(f"dict index {ix} out of range")
            if ix >= 0:
                raw = self.mem.read(entries + ix * entry_size, entry_size)
                if hashed:
                    entry_hash, key, value = struct.unpack_from("<qQQ", raw)
                else:
                    (key, value), entry_hash = struct.unpack_from("<QQ", raw), None
                if key == known_key:
                    return value
                if key and entry_hash in (None, key_hash) and self._same_str(key, name, key_hash):
                    return value
            perturb >>= 5
            i = (i * 5 + perturb + 1) & mask
        raise ReadError("dict probe did not end")

    def _same_str(self, key: int, name: str, key_hash: int) -> bool:
        """Whether a key (another object than the one learned) is the str `name`."""
        length_at = key + self.L["unicode.length"]
        if self.mem.i64(length_at + 8) != key_hash or self.mem.i64(length_at) != len(name):
            return False
        return self.obj.type_name(key) == "str" and self.obj.unicode(key, len(name)) == name
