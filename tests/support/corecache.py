"""Cores of the C and Python crashers, each made at most once per test session."""

from __future__ import annotations

import signal
from pathlib import Path

from support.coregen import CrashCase, compile_c, compile_cxx, run_to_core
from support.paths import CRASHERS

# name -> (C source, arguments, signal sent by the test once the crasher is ready)
C_CRASHERS = {
    "null_thread": ("null_thread.c", [], None),
    "wild_write": ("wild_write.c", [], None),
    "recursion": ("recursion.c", [], None),
    "assert_fail": ("assert_fail.c", [], None),
    "double_free": ("double_free.c", [], None),
    "divzero": ("divzero.c", [], None),
    "ud2": ("ud2.c", [], None),
    "sigbus": ("sigbus.c", [], None),
    "killed": ("wait_for_kill.c", [], signal.SIGSEGV),
    "null_callback": ("null_callback.c", [], None),
    # A crash reporter's handler that re-raises: a wild write, a kill() from the test, its own
    # signal frame overwritten, and a handler that crashes by itself (reraise_handler.c).
    "reraise_handler": ("reraise_handler.c", [], None),
    "reraise_sent": ("reraise_handler.c", ["wait"], signal.SIGSEGV),
    "reraise_watchdog": ("reraise_handler.c", ["wait"], signal.SIGABRT),
    "reraise_smashed": ("reraise_handler.c", ["smash"], None),
    "handler_crashes": ("reraise_handler.c", ["inside"], None),
    "reraise_chained": ("reraise_handler.c", ["chain"], None),
}
# The same for C++ crashers: an uncaught exception, a caught one then abort(), an uncaught
# std::bad_alloc, an allocator's fatal message.
CXX_CRASHERS = {
    "uncaught_shape_error": ("uncaught_shape_error.cc", [], None),
    "caught_then_abort": ("caught_then_abort.cc", [], None),
    "bad_alloc": ("bad_alloc.cc", [], None),
    "bfc_oom_abort": ("bfc_oom_abort.cc", [], None),
}
# Crashers whose handler raises the signal again (coregen.run_to_core's `reraised`).
RERAISED = frozenset({"reraise_handler", "reraise_sent", "reraise_watchdog", "reraise_smashed", "reraise_chained"})

class CoreCache:
    """Builds each crash at most once per test session, on first use."""

    def __init__(self, root: Path):
        self.root = root
        self.cases: dict[str, CrashCase] = {}

    def c_crash(self, name: str) -> CrashCase:
        if name not in self.cases:
            source, args, sig = C_CRASHERS[name] if name in C_CRASHERS else CXX_CRASHERS[name]
            workdir = self.root / name
            workdir.mkdir(parents=True, exist_ok=True)
            compile = compile_c if name in C_CRASHERS else compile_cxx
            exe = compile(CRASHERS / source, workdir / name)
            self.cases[name] = run_to_core(name, [str(exe), *args], workdir, kill_after_ready=sig, reraised=name in RERAISED)
        return self.cases[name]

    def python_crash(
        self, name: str, python: Path, script: Path, env: dict | None = None, kill_after_ready: int | None = None,
        reraised: bool = False,
    ) -> CrashCase:  # fmt: skip
        if name not in self.cases:
            workdir = self.root / name
            workdir.mkdir(parents=True, exist_ok=True)
            case = run_to_core(
                name, [str(python), str(script)], workdir, env=env, kill_after_ready=kill_after_ready, reraised=reraised
            )
            case.exe = python
            case.extra["script"] = script
            self.cases[name] = case
        return self.cases[name]
