"""The symbols of one process (coreanalyze.process.process.Process.symbol_at / symbol_address): names of
code addresses through the symbolizer's per-build-id indexes, global variables from the symbol
tables of the modules they live in, and addresses of the interpreter's named symbols. Only
files that are the crashed build are read: another build names the wrong function."""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field
from typing import Any, Sequence

from coreanalyze.base import model
from coreanalyze.base.elfheaders import ElfHeaderError, defined_symbols
from coreanalyze.base.filecache import PerFileCache
from coreanalyze.corefile import PARSE_ERRORS, CoreNotes
from coreanalyze.symbols.bias import load_bias
from coreanalyze.symbols.frames import READ_ERRORS
from coreanalyze.symbols.objects import object_at

TRUSTED_STATUSES = ("ok", "no-build-id")
# Objects whose symbol tables may hold _PyRuntime / Py_Version: the executable (a static
# interpreter) and libpython (a shared one). Other libraries are never searched: a
# TensorFlow process maps gigabytes of them.
INTERPRETER_PREFIXES = ("libpython",)
# Symbol tables in the order they are searched: the exported names the walker needs are in
# .dynsym, which is small; .symtab is read only for a name .dynsym does not have.
SYMBOL_TABLES = (".dynsym", ".symtab")


@dataclass(frozen=True)
class Symbol:
    """A symbol of the crashed build, placed in the process."""

    name: str  # as the symbol table has it (mangled)
    start: int | None  # its address in the process, where the table says


class ProcessSymbols:
    """Symbols of a core's process, from the module table it was given (set_modules). Functions
    are named through the symbolizer the process uses (use_symbolizer; none: unnamed)."""

    def __init__(self, notes: CoreNotes, modules: Sequence[model.Module] = ()) -> None:
        self._notes = notes
        self._symbolizer: Any = None
        self.set_modules(modules)

    def set_modules(self, modules: Sequence[model.Module]) -> None:
        self._modules = list(modules)
        self._ranged = sorted((m for m in self._modules if m.start is not None and m.end is not None), key=lambda m: m.start)
        self._starts = [m.start for m in self._ranged]
        self._biases: dict[str, int | None] = {}
        self._functions: dict[int, Symbol | None] = {}
        self._sources: list[_SymbolSource] | None = None

    def use_symbolizer(self, symbolizer: Any) -> None:
        """Name functions through symbolizer (coreanalyze.symbols.Symbolizer) from now on."""
        if symbolizer is not self._symbolizer:
            self._symbolizer = symbolizer
            self._functions = {}

    def module_at(self, address: int) -> model.Module | None:
        i = bisect.bisect_right(self._starts, address) - 1
        if i >= 0 and self._ranged[i].start <= address < self._ranged[i].end:
            return self._ranged[i]
        return None

    def symbol_at(self, address: int, kind: str = "function") -> Symbol | None:
        if kind == "object":
            return self._object_at(address)
        if address in self._functions:
            return self._functions[address]
        found = None
        module = self.module_at(address)
        if module is not None and module.status in TRUSTED_STATUSES and self._symbolizer is not None:
            bias = self._bias(module, (module.local_path,))
            if bias is not None:
                try:
                    info = self._symbolizer.symbolize_module(module, address - bias)
                except READ_ERRORS:
                    info = None
                if info is not None and info.raw_name:
                    found = Symbol(info.raw_name, None if info.start is None else info.start + bias)
        self._functions[address] = found
        return found

    def symbol_address(self, name: str) -> int | None:
        if self._sources is None:
            executable = self._notes.executable
            interpreter = [m for m in self._modules if m.path == executable]
            interpreter += [m for m in self._modules if os.path.basename(m.path).startswith(INTERPRETER_PREFIXES)]
            self._sources = [
                _SymbolSource(m, load_bias(m, self._notes, [m.local_path]))
                for m in interpreter
                if m.local_path and m.status.trusted_image
            ]
        for source in self._sources:
            if source.bias is None:
                continue
            value = source.lookup(name)
            if value is not None:
                return source.bias + value
        return None

    def _bias(self, module: model.Module, files: Sequence[str | None]) -> int | None:
        if module.path not in self._biases:
            self._biases[module.path] = load_bias(module, self._notes, files=files)
        return self._biases[module.path]

    def _object_at(self, address: int) -> Symbol | None:
        # The module mapped lowest below address whose file here is the crashed build.
        below = [m for m in self._modules if m.start is not None and m.start <= address and m.local_path and m.status in TRUSTED_STATUSES]
        module = max(below, key=lambda m: m.start) if below else None
        if module is None or module.start is None:
            return None
        found = object_at(module.local_path, module.start, address)
        return Symbol(*found) if found is not None else None


class SymbolTable:
    """The symbols a test gives (name -> address, or name -> (address, size)), for a Process
    made in memory (coreanalyze.process.process.Process.in_memory)."""

    def __init__(self, symbols: dict[str, int | tuple[int, int]]) -> None:
        spans = [(v, 1) if isinstance(v, int) else v for v in symbols.values()]
        self._by_name = {name: span[0] for name, span in zip(symbols, spans)}
        self._spans = sorted((start, size, name) for name, (start, size) in zip(symbols, spans))
        self._starts = [s for s, _, _ in self._spans]

    def set_modules(self, modules: Sequence[model.Module]) -> None:
        pass

    def use_symbolizer(self, symbolizer: Any) -> None:
        pass

    def module_at(self, address: int) -> model.Module | None:
        return None

    def symbol_at(self, address: int, kind: str = "function") -> Symbol | None:
        i = bisect.bisect_right(self._starts, address) - 1
        if i >= 0:
            start, size, name = self._spans[i]
            if start <= address < start + max(size, 1):
                return Symbol(name, start)
        return None

    def symbol_address(self, name: str) -> int | None:
        return self._by_name.get(name)


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


def _defined_symbols(path: str, section_name: str) -> dict[str, int]:
    """Name -> value of the symbols a file's symbol table defines (the first of a name wins),
    read once per version of the file: the cores of a batch share their interpreter."""
    return _SYMBOLS[section_name].get(path, lambda p: read_symbols(p, section_name)) or {}


def read_symbols(path: str, section_name: str) -> dict[str, int]:
    try:
        with open(path, "rb") as f:
            return defined_symbols(f, os.fstat(f.fileno()).st_size, section_name)
    except (OSError, ElfHeaderError, *PARSE_ERRORS):
        return {}


_SYMBOLS: dict[str, PerFileCache[dict[str, int]]] = {name: PerFileCache() for name in SYMBOL_TABLES}
