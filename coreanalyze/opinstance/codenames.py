"""Which function a code address of the crashed process is: the module's symbol tables, read
through the symbolizer (the same cached per-build-id indexes that name frames)."""

from __future__ import annotations

import bisect
import os
from typing import Sequence

from coreanalyze import model
from coreanalyze.corefile import CoreNotes
from coreanalyze.symbols.bias import load_bias, loads_from_file
from coreanalyze.symbols.frames import READ_ERRORS
from coreanalyze.symbols.symbolizer import Symbolizer

TRUSTED_STATUSES = ("ok", "no-build-id")


class CodeNames:
    """address -> (raw symbol name, function start), for modules that are the crashed build."""

    def __init__(self, modules: Sequence[model.Module], notes: CoreNotes | None, symbolizer: Symbolizer):
        self._ranged = sorted((m for m in modules if m.start is not None and m.end is not None), key=lambda m: m.start)
        self._starts = [m.start for m in self._ranged]
        self._notes = notes
        self._symbolizer = symbolizer
        self._biases: dict[str, int | None] = {}
        self._names: dict[int, tuple[str | None, int | None] | None] = {}
        self._loads: dict[str, list[tuple[int, int]]] = {}

    def module_at(self, address: int) -> model.Module | None:
        i = bisect.bisect_right(self._starts, address) - 1
        if i >= 0 and self._ranged[i].start <= address < self._ranged[i].end:
            return self._ranged[i]
        return None

    def function_at(self, address: int) -> tuple[str | None, int | None] | None:
        """(raw name, start address in the process) of the function holding address, or None."""
        if address in self._names:
            return self._names[address]
        found = None
        module = self.module_at(address)
        # A file here that is another build would name the address after the wrong function.
        if module is not None and module.status in TRUSTED_STATUSES:
            if module.path not in self._biases:
                self._biases[module.path] = load_bias(module, self._notes, files=(module.local_path,))
            bias = self._biases[module.path]
            if bias is not None:
                try:
                    info = self._symbolizer.symbolize_module(module, address - bias)
                except READ_ERRORS:
                    info = None
                if info is not None and info.raw_name:
                    found = (info.raw_name, None if info.start is None else info.start + bias)
        self._names[address] = found
        return found

    def file_cstring(self, address: int, max_len: int = 256) -> bytes | None:
        """The NUL-terminated bytes at address read from the module's file here: read-only data
        (string literals) is not in a core, the file of the same build has it."""
        module = self.module_at(address)
        if module is None or module.status not in TRUSTED_STATUSES or not module.local_path:
            return None
        if module.path not in self._biases:
            self._biases[module.path] = load_bias(module, self._notes, files=(module.local_path,))
        bias = self._biases[module.path]
        if bias is None:
            return None
        if module.path not in self._loads:
            self._loads[module.path] = sorted(loads_from_file(module.local_path), key=lambda load: load[1])
        vaddr = address - bias
        below = [load for load in self._loads[module.path] if load[1] <= vaddr]
        if not below:
            return None
        p_offset, p_vaddr = below[-1]
        try:
            with open(module.local_path, "rb") as f:
                data = os.pread(f.fileno(), max_len, p_offset + (vaddr - p_vaddr))
        except (OSError, OverflowError, ValueError):
            return None
        end = data.find(b"\0")
        return data[:end] if end >= 0 else None
