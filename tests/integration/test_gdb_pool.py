"""A pooled gdb serving core after core: the previous core's inferior stays loaded while the
next core loads (their libraries are shared), is dropped before a thread is listed, and never
shows in the next core's analysis."""

from __future__ import annotations

import pytest
from support.require import require

from coreanalyze.corefile import read_core
from coreanalyze.gdb.debugger import GdbDebugger
from coreanalyze.gdb.pool import GdbPool
from coreanalyze.gdb.session import mi_quote


@pytest.fixture(scope="module")
def two_cores(cores):
    require("gdb")
    return cores.c_crash("null_thread"), cores.c_crash("double_free")


def _tids(case) -> list[int]:
    notes = read_core(str(case.core))
    try:
        return sorted(t.tid for t in notes.threads)
    finally:
        notes.close()


def _inferiors(session) -> list[str]:
    return [g["id"] for g in session.mi("-list-thread-groups").get("groups", [])]


def test_each_core_sees_only_its_own_threads_and_earlier_ones_are_dropped(two_cores):
    first, second = two_cores
    with GdbPool(size=1) as pool:
        for n, case in enumerate((first, first, second, first, second)):
            with pool.lease() as gdb:
                session = gdb.open_core(str(case.core), executable=str(case.exe))
                # The previous core was loaded beside this one; it is being dropped.
                assert session.pending == (2 if n else 0)
                threads, current = GdbDebugger(session).threads()
                assert session.pending == 0
                assert sorted(t.tid for t in threads) == _tids(case)
                assert current in {t.id for t in threads}
                assert len(_inferiors(session)) == 1
        assert pool.restarts == 0


def test_a_gdb_that_cannot_drop_the_previous_core_is_replaced(two_cores):
    first, second = two_cores
    with GdbPool(size=1) as pool:
        with pool.lease() as gdb:
            gdb.open_core(str(first.core), executable=str(first.exe))
        stuck = gdb.session
        stuck.command_timeout = 1
        stuck.send_later(f"-interpreter-exec console {mi_quote('shell sleep 30')}")
        with pool.lease() as gdb:
            session = gdb.open_core(str(second.core), executable=str(second.exe))
            assert session is not stuck and not stuck.alive
            assert sorted(t.tid for t in GdbDebugger(session).threads()[0]) == _tids(second)
        assert pool.restarts == 1
