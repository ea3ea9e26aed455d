"""The work ahead of the stages after the debugger (coreanalyze.pipeline.warmup, coreanalyze.base.idle,
lazyregex.compile_ahead): done only while the main thread waits, never changing a result."""

from __future__ import annotations

import sys
import threading
import time

from coreanalyze.base import idle
from coreanalyze.classify.lazyregex import LazyPattern, _lazy_patterns, compile_ahead
from coreanalyze.classify.rules import _builtin
from coreanalyze.pipeline.warmup import WarmUp


def compiled(holder) -> list[bool]:
    return [p._compiled is not None for p in _lazy_patterns(holder)]


def test_compile_ahead_compiles_what_is_matched_one_by_one_and_no_skip_list():
    rules = _builtin()  # a fresh set: nothing compiled yet
    assert not any(compiled(rules.matched_one_by_one()))
    count = compile_ahead(rules.matched_one_by_one(), lambda: True)
    assert count == len(compiled(rules.matched_one_by_one())) > 100
    assert all(compiled(rules.matched_one_by_one()))
    # The skip lists are matched through their combined alternations, never one by one.
    assert not any(compiled(rules.skip))


def test_compile_ahead_stops_when_told():
    patterns = [LazyPattern(r"a+b"), LazyPattern(r"c+d"), LazyPattern(r"e+f")]
    answers = iter([True, False])
    assert compile_ahead(patterns, lambda: next(answers)) == 1
    assert compiled(patterns) == [True, False, False]
    # What was compiled ahead matches as re.compile would.
    assert patterns[0].search("xaab").group() == "aab"


def test_only_the_main_threads_waits_count():
    stop = threading.Event()
    seen: list[bool] = []

    def other_thread() -> None:
        with idle.waiting():  # not the main thread: marks nothing
            stop.set()
        seen.append(idle.until_main_waits(stop))

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert seen == [False]


def test_a_thread_proceeds_while_the_main_thread_waits():
    stop = threading.Event()
    result: list[bool] = []
    t = threading.Thread(target=lambda: result.append(idle.until_main_waits(stop)))
    t.start()
    with idle.waiting():
        t.join()
    assert result == [True]


def test_warm_up_works_only_while_the_main_thread_waits_and_restores_switching():
    before = sys.getswitchinterval()
    rules = _builtin()
    warm = WarmUp(lambda: rules)
    warm.start()
    assert sys.getswitchinterval() <= before
    time.sleep(0.2)  # the main thread runs (sleeping is not waiting for gdb)
    assert not any(compiled(rules.matched_one_by_one()))
    deadline = time.monotonic() + 60
    while not all(compiled(rules.matched_one_by_one())) and time.monotonic() < deadline:
        with idle.waiting():
            time.sleep(0.01)
    assert all(compiled(rules.matched_one_by_one()))
    warm.wait()
    assert sys.getswitchinterval() == before


def test_a_stopped_warm_up_ends_without_the_main_thread_waiting():
    before = sys.getswitchinterval()
    rules = _builtin()
    warm = WarmUp(lambda: rules)
    warm.start()
    warm.wait()  # returns: the thread is woken to see the stop, not left waiting
    assert warm._thread is not None and not warm._thread.is_alive()
    assert not any(compiled(rules.matched_one_by_one()))
    assert sys.getswitchinterval() == before
