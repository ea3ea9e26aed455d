"""The dynamic loader's list of loaded libraries, as the Process reads it once per core
(coreanalyze.corefile.loader)."""

from __future__ import annotations

from coreanalyze.corefile.loader import LoadedLibrary
from coreanalyze.process.process import Process

__all__ = ["LoadedLibrary", "read_link_map"]


def read_link_map(process: Process) -> list[LoadedLibrary]:
    """The loader's libraries in load order (the executable and nameless entries left out)."""
    return process.loaded_libraries
