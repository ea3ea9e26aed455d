"""The CPython walker's Target over the core file itself, with no debugger.

Memory comes from the core's own segments (coreanalyze.memory); what the kernel did not dump
(read-only file-backed pages: type names and other strings in .rodata) is read from the local
file mapped there, as a debugger does. Global symbols come from the dynamic and static symbol
tables of the executable and libpython, shifted by their load bias. Type offsets from DWARF
are not read here: the walker falls back to its tables and to 3.13's own `_Py_DebugOffsets`.

    with read_core(path) as notes:
        document = walk_core(notes, module_table(notes, executable=exe))
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from coreanalyze import model
from coreanalyze.corefile import PARSE_ERRORS, CoreNotes
from coreanalyze.resources import gdb_script_module
from coreanalyze.symbols.bias import load_bias

# The walker is one of the files loaded into gdb; here it runs in-process.
pywalker = gdb_script_module("pywalker")
ReadError, walk = pywalker.ReadError, pywalker.walk

# Objects whose symbol tables may hold _PyRuntime / Py_Version: the executable (a static
# interpreter) and libpython (a shared one). Other libraries are never searched: a
# TensorFlow process maps gigabytes of them.
INTERPRETER_PREFIXES = ("libpython",)


# Symbol tables in the order they are searched: the exported names the walker needs are in
# .dynsym, which is small; .symtab is read only for a name .dynsym does not have.
SYMBOL_TABLES = (".dynsym", ".symtab")


@dataclass
class _SymbolSource:
    module: model.Module
    bias: int | None
    tables: dict[str, dict[str, int]] = field(default_factory=dict)  # section -> name -> file address

    def lookup(self, name: str) -> int | None:
        for section in SYMBOL_TABLES:
            if section not in self.tables:
                self.tables[section] = _defined_symbols(self.module.local_path or "", section)
            value = self.tables[section].get(name)
            if value is not None:
                return value
        return None


class CoreTarget:
    """Memory, symbols and threads of a core, read in-process (see pywalker.Target)."""

    def __init__(self, notes: CoreNotes, modules: list[model.Module]) -> None:
        self._notes = notes
        self._local = {m.path: m.local_path for m in modules if m.local_path}
        executable = notes.executable
        interpreter = [m for m in modules if m.path == executable]
        interpreter += [m for m in modules if os.path.basename(m.path).startswith(INTERPRETER_PREFIXES)]
        # Only the crashed build's own files: another build's _PyRuntime is somewhere else (the
        # runtime is then located in the core, coreanalyze.pyruntime).
        self._sources = [
            _SymbolSource(m, load_bias(m, notes, [m.local_path]))
            for m in interpreter
            if m.local_path and m.status.trusted_image
        ]
        self._paths = [m.path for m in modules]

    # -- Target -----------------------------------------------------------------------------

    def read(self, address: int, size: int) -> bytes:
        data = self._notes.memory.read(address, size)
        if data is None:
            data = self._read_mapped_file(address, size)
        if data is None:
            raise ReadError(f"cannot read {size} bytes at 0x{address:x}")
        return data

    def symbol_address(self, name: str) -> int | None:
        for source in self._sources:
            if source.bias is None:
                continue
            value = source.lookup(name)
            if value is not None:
                return source.bias + value
        return None

    def object_files(self) -> list[str]:
        return list(self._paths)

    def type_offsets(self, spec: dict[str, tuple[str, str | None]], near: int) -> dict[str, int]:
        return {}

    def thread_lwps(self) -> list[int]:
        return [t.tid for t in self._notes.threads if t.tid]

    def pid(self) -> int | None:
        return self._notes.pid

    # -- helpers ----------------------------------------------------------------------------

    def _read_mapped_file(self, address: int, size: int) -> bytes | None:
        mapping = self._notes.mapping_containing(address)
        if mapping is None or address + size > mapping.end:
            return None
        local = self._local.get(mapping.path)
        if local is None:
            return None
        try:
            with open(local, "rb") as f:
                data = os.pread(f.fileno(), size, mapping.file_offset + (address - mapping.start))
        except (OSError, OverflowError, ValueError):
            return None
        return data if len(data) == size else None


def _defined_symbols(path: str, section_name: str) -> dict[str, int]:
    """Name -> value of the symbols a file's symbol table defines (the first of a name wins)."""
    out: dict[str, int] = {}
    try:
        with open(path, "rb") as f:
            section = ELFFile(f).get_section_by_name(section_name)
            if not isinstance(section, SymbolTableSection):
                return out
            for symbol in section.iter_symbols():
                if symbol["st_shndx"] != "SHN_UNDEF" and symbol["st_value"] and symbol.name:
                    out.setdefault(symbol.name, symbol["st_value"])
    except (OSError, *PARSE_ERRORS):
        return out
    return out


def walk_core(notes: CoreNotes, modules: list[model.Module], options: dict | None = None) -> dict:
    """The walker's document for a core, read without a debugger. options may carry a runtime
    located in the core ("runtime", "version_hint": see coreanalyze.pyruntime)."""
    return walk(CoreTarget(notes, modules), options or {})


def has_runtime_symbol(notes: CoreNotes, modules: list[model.Module]) -> bool:
    """Whether the crashed build's own interpreter files here name _PyRuntime."""
    return CoreTarget(notes, modules).symbol_address("_PyRuntime") is not None
