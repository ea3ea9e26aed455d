"""What the walker needs from its host: a debugger (gdb_scripts/pystacks.py runs it over gdb's view
of a core) or the core file read in-process (coreanalyze.python.coretarget)."""

from __future__ import annotations

from typing import Protocol


class ReadError(Exception):
    """A read of the inferior's memory failed or was refused as absurd."""


class Target(Protocol):
    """What the walker needs from a debugger (or from a core file read in-process)."""

    def read(self, address: int, size: int) -> bytes:
        """size bytes at address; raises ReadError when they cannot be read."""

    def symbol_address(self, name: str) -> int | None:
        """Address of a global symbol (minimal symbols of .dynsym/.symtab suffice)."""

    def object_files(self) -> list[str]:
        """Paths of the loaded executable and libraries."""

    def type_offsets(self, spec: dict[str, tuple[str, str | None]], near: int) -> dict[str, int]:
        """Offsets of the spec's fields ("struct.field" -> (type name, member path or None for
        sizeof)) from the debug info of the code at address near; {} when it has none."""

    def thread_lwps(self) -> list[int]:
        """The LWPs of the process's threads."""

    def pid(self) -> int | None:
        """The process id, when known."""
