"""Which function a code address of the crashed process is: the module's symbol tables, read
through the symbolizer (the same cached per-build-id indexes that name frames)."""

from __future__ import annotations

import bisect
from typing import Sequence

from coreanalyze import model
from coreanalyze.corefile import CoreNotes
from coreanalyze.process import as_process
from coreanalyze.symbols.bias import load_bias
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
        # Memory of the files that are the crashed build: the pipeline's Process, or one of these modules.
        self._process = as_process(notes, modules) if notes is not None else None

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
        (string literals) is not in a core, the file of the same build has it (the Process
        reads only such files)."""
        data = self._process.read_mapped_file(address, max_len) if self._process is not None else None
        end = data.find(b"\0") if data else -1
        return data[:end] if end >= 0 else None
