"""Unit tests need no debugger: they run with gdb taken off PATH, so one that starts needing
it fails here rather than passing only on machines that have it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

DEBUGGERS = ("gdb", "gdb-multiarch")


def _path_without_debuggers(shadow: Path) -> str:
    """A PATH of one directory linking every program of the current PATH but the debuggers."""
    shadow.mkdir(exist_ok=True)
    for directory in os.environ.get("PATH", "").split(os.pathsep):  # the first one wins, as for PATH
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            link = shadow / entry.name
            if entry.name in DEBUGGERS or os.path.lexists(link):
                continue
            link.symlink_to(entry.path)
    return str(shadow)


@pytest.fixture(scope="module", autouse=True)
def no_debugger_on_path(tmp_path_factory):
    saved = os.environ.get("PATH", "")
    os.environ["PATH"] = _path_without_debuggers(tmp_path_factory.getbasetemp() / "path-without-gdb")
    assert shutil.which("gdb") is None
    try:
        yield
    finally:
        os.environ["PATH"] = saved
