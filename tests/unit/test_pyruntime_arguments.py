"""What the runtime locator hands the walker, and the interpreter versions it reads from file
names (no core needed: the locating itself is tested on real cores in
integration/test_pyruntime.py)."""

from __future__ import annotations

import pytest

from coreanalyze.pyruntime import FoundRuntime, pywalker, version_from_name


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("libpython3.12.so.1.0", (3, 12)),
        ("python3.11", (3, 11)),
        ("python3.13d", (3, 13)),
        ("libpython3.10.so", (3, 10)),
        ("python3", None),
        ("python", None),
        ("libpython3.so", None),
        ("mypython3.12", None),
        ("libc.so.6", None),
    ],
)
def test_version_from_the_interpreters_file_name(name, version):
    assert version_from_name(name) == version


@pytest.mark.parametrize("version", [(3, 11), (3, 13, 0)])
def test_the_walker_reads_back_the_located_runtime(version):
    found = FoundRuntime(0x7F35BE1294C0, version, "cross-pointers", "/opt/py/lib/libpython3.11.so.1.0")
    # The arguments given to the gdb-hosted walker and the options of the in-process one agree.
    assert pywalker.parse_args(found.walker_arguments()) == found.walker_options()
    assert found.walker_options() == {"runtime": 0x7F35BE1294C0, "version_hint": version[:2]}
    assert found.note().startswith("Python runtime located by scanning the core")
    assert "0x7f35be1294c0" in found.note()
