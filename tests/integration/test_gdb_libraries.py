"""gdb reads only the libraries a core's threads reach (coreanalyze.gdb.libraries), and the
frames are those of a gdb that read every library: on real cores, through real gdb."""

from __future__ import annotations

import pytest
from support.paths import PYCRASHERS
from support.pythons import require_pyenv_python

from coreanalyze.corefile import read_core
from coreanalyze.gdb.collect import collect
from coreanalyze.gdb.libcopies.naming import _collected
from coreanalyze.gdb.libraries import LibraryChoice, bre_literal
from coreanalyze.gdb.session import GdbSession
from coreanalyze.process.process import Process


def _frames(analysis):
    return [(t.tid, [(f.pc, f.function, f.module, f.file, f.line) for f in t.frames]) for t in analysis.threads]


@pytest.fixture(scope="module")
def python_case(python_cores):
    exe = require_pyenv_python("11")
    return python_cores.python_crash("three_deep_11", exe, PYCRASHERS / "three_deep.py")


def _everything(case):
    with GdbSession() as gdb:
        gdb.load(case.core, executable=case.exe)
        return _frames(collect(gdb))


def test_gdb_reads_the_libraries_the_stacks_reach_and_unwinds_the_same(python_case):
    with read_core(python_case.core) as notes, GdbSession() as gdb:
        choice = LibraryChoice.for_process(Process(notes))
        gdb.load(python_case.core, executable=python_case.exe, libraries=choice)
        analysis = _collected(gdb, choice, max_frames=256)
        assert choice.read < {name for _, _, name in choice.extents}  # some libraries were left unread
    assert _frames(analysis) == _everything(python_case)


def test_frames_in_libraries_not_read_have_gdb_read_them(python_case):
    """With nothing reached (a stack deeper than the part searched, say), each frame found in a
    library gdb has not read makes it read that library and unwind again."""
    with read_core(python_case.core) as notes, GdbSession() as gdb:
        choice = LibraryChoice(reached=[], process=Process(notes))
        gdb.load(python_case.core, executable=python_case.exe, libraries=choice)
        analysis = _collected(gdb, choice, max_frames=256)
        assert choice.wanted  # learned from frames, not from the stacks
    assert _frames(analysis) == _everything(python_case)


def test_a_library_name_is_matched_literally():
    assert bre_literal("/opt/lib/libstdc++.so.6") == r"/opt/lib/libstdc++\.so\.6"
    assert bre_literal("/a [x]/lib*.so$") == r"/a \[x\]/lib\*\.so\$"
