"""The CPython walker is a package with its layouts as data beside it (gdb_scripts/pywalker/): gdb's
own Python imports it as the top-level `pywalker`, the tool as coreanalyze.gdb_scripts.pywalker,
and both read the same tables from layouts/*.json."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from coreanalyze.base.resources import GDB_SCRIPTS
from coreanalyze.python.coretarget import pywalker

tables = sys.modules["coreanalyze.gdb_scripts.pywalker.tables"]


def test_it_loads_as_gdb_loads_it_with_nothing_of_coreanalyze():
    """As pystacks.py makes gdb load it: gdb_scripts/ on sys.path, `import pywalker`."""
    program = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import pywalker;"
        "print(json.dumps([pywalker.__file__, sorted(m for m in sys.modules if m.startswith('coreanalyze')),"
        " len(pywalker.BUILD_TABLES), pywalker.parse_args(['--locals-frames', '3'])]))"
    )
    run = subprocess.run([sys.executable, "-I", "-c", program, str(GDB_SCRIPTS)], capture_output=True, text=True, check=True)
    where, coreanalyze_modules, builds, options = json.loads(run.stdout)
    assert where == str(GDB_SCRIPTS / "pywalker" / "__init__.py")
    assert coreanalyze_modules == []
    assert builds == len(pywalker.BUILD_TABLES) and options == {"locals_frames": 3}


def test_every_version_read_has_a_shape_a_table_and_a_dwarf_spec():
    assert set(pywalker.TABLES) == set(pywalker.SHAPES) == set(pywalker.DWARF_SPEC)
    # The builds that describe themselves in _Py_DebugOffsets: default and free-threaded each.
    assert {build[:2] for build in pywalker.BUILD_TABLES} == set(pywalker.DEBUG_OFFSETS_FIELDS)
    assert {build[2] for build in pywalker.BUILD_TABLES} == {False, True}
    for build, table in pywalker.BUILD_TABLES.items():
        # What the headers test compiles for each build: every DWARF key, and the str state bits.
        spec = pywalker.dwarf_spec(build[:2], build[2])
        assert set(table) == set(spec) | {"unicode.kind_bit", "unicode.compact_bit", "unicode.ascii_bit"}, build
        assert ("gil.enabled" in table) == build[2]


def test_the_debug_offsets_read_fill_layout_keys():
    """Every _Py_DebugOffsets member read is one some version has, and fills a key of the layout
    (or one the walker turns into one: the embedded GIL's fields, the structure sizes)."""
    members = {f for fields in pywalker.DEBUG_OFFSETS_FIELDS.values() for f in fields}
    assert set(pywalker.DEBUG_OFFSET_KEYS) <= members
    keys = {k for table in pywalker.TABLES.values() for k in table} | set(tables.DEBUG_OFFSET_SIZES.values())
    turned = {"interp.gil_embedded", "interp.gil_locked", "interp.gil_holder", "gil.enabled"}
    assert set(pywalker.DEBUG_OFFSET_KEYS.values()) - keys - turned <= {
        "tstate.current_exception", "iframe.tlbc_index", "code.tlbc"
    }


def test_a_row_short_of_a_cell_is_refused():
    data = {"builds": ["3.13", "3.13t"], "offsets": {"object.type": [8, 24], "var.size": [16]}}
    with pytest.raises(tables.LayoutDataError, match="var.size has 1 offsets for 2 builds"):
        tables._offsets_by_build(data)


def test_a_dwarf_place_holds_from_its_version_until_the_next():
    fields = {"tstate.cframe": {"3.11": ["PyThreadState", "cframe"], "3.13": None}}
    specs = tables._dwarf_by_version(fields, [(3, 10), (3, 11), (3, 12), (3, 13), (3, 14)])
    assert [bool(specs[v]) for v in sorted(specs)] == [False, True, True, False, False]
    assert specs[(3, 12)] == {"tstate.cframe": ("PyThreadState", "cframe")}
