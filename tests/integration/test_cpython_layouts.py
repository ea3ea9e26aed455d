"""The walker's tables against CPython's own headers: the data files it loads at start
(gdb_scripts/pywalker/layouts/offsets.json, dwarf.json and debug_offsets.json), as it reads them.

For 3.13 and later the walker carries the layout of every build, default and free-threaded:
the interpreter exports most of it in _Py_DebugOffsets, and the table fills the rest and stands
in for a damaged block. Only 3.13t runs here (test_free_threaded.py), so these tables are checked
where they come from: the headers of each version (pyenv's 3.13, Debian unstable's 3.14 and 3.15
from libpython3.X-dev), compiled here with and without Py_GIL_DISABLED. The field order
of _Py_DebugOffsets, by which the walker reads the exported block, is read out of the same
headers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cpython_headers import debug_offsets_fields, header_layout, include_dir
from support.pythons import require_pyenv_python
from support.require import missing
from support.sidroot import sid_root

from coreanalyze.python.coretarget import pywalker


def headers(minor: str) -> Path:
    """Include/ of CPython 3.X: pyenv's install up to 3.13, the Debian unstable root's after."""
    if minor in ("3.12", "3.13"):
        exe = require_pyenv_python(minor.split(".")[1])
        include = include_dir(exe.parent.parent, minor)
    else:
        include = include_dir(sid_root() / "usr", minor)
    if not (include / "internal").is_dir():
        missing(f"the internal headers of CPython {minor} ({include}/internal)")
    return include


BUILDS = [(major, minor, free) for (major, minor, free) in pywalker.BUILD_TABLES]


@pytest.mark.parametrize("build", BUILDS, ids=[f"{a}.{b}{'t' if t else ''}" for a, b, t in BUILDS])
def test_tabled_layout_is_what_the_headers_lay_out(build, tmp_path):
    major, minor, free_threaded = build
    spec = pywalker.dwarf_spec((major, minor), free_threaded)
    found = header_layout(headers(f"{major}.{minor}"), spec, tmp_path, free_threaded)
    assert found == pywalker.BUILD_TABLES[build]


@pytest.mark.parametrize("minor", sorted(pywalker.DEBUG_OFFSETS_FIELDS))
def test_debug_offsets_field_order_is_the_headers(minor):
    version = f"{minor[0]}.{minor[1]}"
    assert pywalker.DEBUG_OFFSETS_FIELDS[minor] == debug_offsets_fields(headers(version))
    # Every field the walk reads is one the struct has.
    read = {f for f in pywalker.DEBUG_OFFSET_KEYS if f in pywalker.DEBUG_OFFSETS_FIELDS[minor]}
    assert {"thread_state.current_frame", "interpreter_frame.executable", "code_object.co_code_adaptive"} <= read


def test_gil_size_of_3_12(tmp_path):
    """3.12's table (measured on its DWARF) knows how large the GIL structure is, as 3.13+ do."""
    spec = {"gil.size": ("struct _gil_runtime_state", None)}
    found = header_layout(headers("3.12"), spec, tmp_path, free_threaded=False)
    assert found["gil.size"] == pywalker.TABLES[(3, 12)]["gil.size"]
