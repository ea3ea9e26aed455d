"""What the runtime locator hands the walker, and the interpreter versions it reads from file
names (no core needed: the locating itself is tested on real cores in
integration/test_pyruntime.py)."""

from __future__ import annotations

import pytest

from coreanalyze.python.pyruntime import FoundRuntime, pywalker, version_from_name


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


@pytest.mark.parametrize(
    "options",
    [
        dict(),
        dict(imports=True),
        dict(with_locals=True, locals_tid=4242, imports=True),
        dict(with_locals=True, locals_frames=5000),
        dict(runtime=0x7F35BE1294C0, version_hint=(3, 11), show_layout=True),
    ],
)
def test_gdb_and_in_process_walkers_are_asked_the_same(options):
    """The typed options reach the walker alike: as its gdb command's arguments, parsed back
    inside gdb, and as the in-process walker's own options."""
    from coreanalyze.gdb.debugger import walker_arguments
    from coreanalyze.python.coretarget import walker_options
    from coreanalyze.python.pywalk import WalkOptions

    typed = WalkOptions(**options)
    assert pywalker.parse_args(walker_arguments(typed)) == walker_options(typed)


def test_the_located_runtime_becomes_the_walks_options():
    from coreanalyze.pipeline.pystacks import walk_options

    found = FoundRuntime(0x7F35BE1294C0, (3, 13, 0), "debug-offsets", "/usr/bin/python3.13")
    options = walk_options(imports=True, runtime=found)
    assert (options.runtime, options.version_hint) == (found.address, (3, 13))
    # Without locals the crashing thread is not part of the question: a walk started early
    # for the notes' crashing thread serves the thread the debugger names.
    assert walk_options(locals_tid=1) == walk_options(locals_tid=2)
