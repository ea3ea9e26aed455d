"""The stages after the debugger, prepared while the debugger works.

Once gdb has unwound the threads, the stages that explain the crash import their modules, read
their rules files and compile regular expressions: a good part of a warm analysis's Python time,
all on the main thread, none of it depending on the core. Meanwhile, during gdb's loading and
unwinding, the main thread only waits. So a thread does that work then (started with the other
work beside the debugger, see stages.while_debugger_loads). Each small step is taken only while
the main thread is blocked on gdb (coreanalyze.base.idle): between gdb's answers the main thread runs
Python of its own, which the interpreter lock would otherwise share with this thread. It stops
when the debugger stage is over; whatever is left is done where it is needed, exactly as without
this module. Nothing here changes a result; it only moves work.
"""

from __future__ import annotations

import importlib
import sys
import threading
from typing import Any, Callable

from coreanalyze.base import idle

# While the thread runs, the interpreter is handed over this often (default 5 ms): when gdb
# answers, the main thread waits for it at most this long, not 5 ms per command.
SWITCH_INTERVAL = 0.0005

# Modules the stages after the debugger import (and every caller renders the report); first
# the demangler, which naming gdb's frames may already need.
MODULES = (
    "cxxfilt",
    "coreanalyze.classify.classifier",
    "coreanalyze.classify.reraise",
    "coreanalyze.hang",
    "coreanalyze.hang.verdict",
    "coreanalyze.gpu.stage",
    "coreanalyze.opinstance.tensorflow",
    "coreanalyze.opinstance.tflite",
    "coreanalyze.process.environment",
    "coreanalyze.render",
)
# (module, function): rules files read and patterns compiled once per process (each cached
# where it is defined), in the order the stages meet them.
LOADERS = (
    ("coreanalyze.classify.reraise", "reraise_rules"),
    ("coreanalyze.hang.rules", "hang_rules"),
    ("coreanalyze.classify.abortmsg", "message_patterns"),
    ("coreanalyze.classify.gpuerrors", "data"),
    ("coreanalyze.classify.gpuhost", "host_call_rules"),
    ("coreanalyze.opinstance.layouts", "all_layouts"),
)


class WarmUp:
    """One thread doing MODULES, the rules' skip lists, LOADERS, then the rules' own patterns;
    each step waits for the main thread to wait, and is not taken once stopped."""

    def __init__(self, rules: Callable[[], Any]) -> None:
        self._rules = rules  # the RuleSet the classification will use (may wait for its reading)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._switch_interval = 0.005

    def start(self) -> None:
        if self._thread is None:
            self._switch_interval = sys.getswitchinterval()
            sys.setswitchinterval(min(SWITCH_INTERVAL, self._switch_interval))
            self._thread = threading.Thread(target=self._run, name="warm-up", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Let the main thread have the interpreter: the thread ends after its current step."""
        if not self._stop.is_set():
            self._stop.set()
            idle.wake()
            if self._thread is not None:
                sys.setswitchinterval(self._switch_interval)

    def wait(self) -> None:
        """Stop, and wait for the step under way: no import of this thread then overlaps one of
        the main thread's (two threads importing modules that import each other can meet a
        module half made)."""
        self.stop()
        if self._thread is not None:
            self._thread.join()

    def _may_go_on(self) -> bool:
        """Wait for the main thread to block on gdb; False once stopped."""
        return idle.until_main_waits(self._stop)

    def _run(self) -> None:
        from coreanalyze.classify.lazyregex import compile_ahead

        try:
            for name in MODULES:
                if not self._may_go_on():
                    return
                importlib.import_module(name)
            if not self._may_go_on():
                return
            rules = self._rules()
            rules.combined_skip()
            for module, function in LOADERS:
                if not self._may_go_on():
                    return
                getattr(importlib.import_module(module), function)()
            compile_ahead(rules.matched_one_by_one(), self._may_go_on)
        except Exception:  # noqa: BLE001, S110 - the stages do the same work and report its errors
            pass
