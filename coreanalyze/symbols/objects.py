"""Global and static variables by address: the STT_OBJECT symbols of a module's symbol tables
(the symbolizer's indexes hold functions only). A mutex that is a global (`accounts_lock`) is
named this way."""

from __future__ import annotations

import os

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

STT_OBJECT = "STT_OBJECT"
# Symbol tables of bigger files (TensorFlow's libraries) take seconds to walk in Python; their
# locks are members of objects on the heap anyway.
MAX_FILE_BYTES = 64 * 1024 * 1024


def object_at(path: str, base: int, address: int) -> tuple[str, int] | None:
    """(name, start in the process) of the variable holding address, in the file at path
    mapped from base; None where its symbol tables name none."""
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
                        return symbol.name, start + bias
    except (OSError, ELFError, ValueError, KeyError, AttributeError):
        return None
    return None
