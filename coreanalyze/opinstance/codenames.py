"""Which function a code address of the crashed process is: the Process's symbols (the module's
symbol tables, read through the symbolizer: the same cached per-build-id indexes that name
frames)."""

from __future__ import annotations

from typing import Any, Sequence

from coreanalyze.base import model
from coreanalyze.process.process import Process


class CodeNames:
    """address -> (raw symbol name, function start), for modules that are the crashed build."""

    def __init__(self, modules: Sequence[model.Module], process: Process, symbolizer: Any = None):
        """symbolizer: the one the process names functions through from now on (None: as before)."""
        if list(modules) != process.modules:
            process.set_modules(modules)
        if symbolizer is not None:
            process.use_symbolizer(symbolizer)
        self._process = process

    def module_at(self, address: int) -> model.Module | None:
        return self._process.symbols.module_at(address)

    def function_at(self, address: int) -> tuple[str | None, int | None] | None:
        """(raw name, start address in the process) of the function holding address, or None."""
        found = self._process.symbol_at(address)
        return None if found is None else (found.name, found.start)

    def file_cstring(self, address: int, max_len: int = 256) -> bytes | None:
        """The NUL-terminated bytes at address read from the module's file here: read-only data
        (string literals) is not in a core, the file of the same build has it (the Process
        reads only such files)."""
        data = self._process.read_mapped_file(address, max_len)
        end = data.find(b"\0") if data else -1
        return data[:end] if end >= 0 else None
