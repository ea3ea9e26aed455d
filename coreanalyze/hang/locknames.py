"""Names for the locks of a hang: a mutex that is a global or static variable has a symbol
(`accounts_lock`) in the symbol table of the module it lives in."""

from __future__ import annotations

import os

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from coreanalyze.model import Module

STT_OBJECT = "STT_OBJECT"
# Symbol tables of bigger files (TensorFlow's libraries) take seconds to walk in Python; their
# locks are members of objects on the heap anyway.
MAX_FILE_BYTES = 64 * 1024 * 1024


def _module_for(address: int, modules: list[Module]) -> Module | None:
    below = [m for m in modules if m.start is not None and m.start <= address and m.local_path and m.status in ("ok", "no-build-id")]
    return max(below, key=lambda m: m.start) if below else None


def _object_at(path: str, base: int, address: int) -> str | None:
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as f:
            elf = ELFFile(f)
            loads = [s["p_vaddr"] - s["p_offset"] for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
            bias = base - (min(loads) if loads else 0) if elf["e_type"] == "ET_DYN" else 0
            wanted = address - bias
            for name in (".symtab", ".dynsym"):
                table = elf.get_section_by_name(name)
                if table is None or not hasattr(table, "iter_symbols"):
                    continue
                for symbol in table.iter_symbols():
                    if symbol["st_info"]["type"] != STT_OBJECT or not symbol.name:
                        continue
                    start, size = symbol["st_value"], symbol["st_size"]
                    if start <= wanted < start + max(size, 1):
                        return symbol.name if wanted == start else f"{symbol.name}+{wanted - start:#x}"
    except (OSError, ELFError, ValueError, KeyError, AttributeError):
        return None
    return None


def lock_symbol(address: int | None, modules: list[Module]) -> str | None:
    """The variable at address ('accounts_lock'), when a module's symbol table names it."""
    if address is None:
        return None
    module = _module_for(address, modules)
    if module is None or module.start is None:
        return None
    return _object_at(module.local_path, module.start, address)
