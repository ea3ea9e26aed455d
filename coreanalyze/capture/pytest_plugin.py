"""`pytest --coreanalyze=DIR`: a test that kills its process gets a report naming the test.

Off unless asked (registered for every pytest run of the environment, it only adds the option).
The pytest process is armed (coreanalyze.capture.guard); pytest-xdist's workers are its children,
watched by the same helper. Each process notes the test it runs (DIR/.running/PID), read when that
process crashes; the terminal summary lists the verdicts of the session's crashes.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

OPTION = "--coreanalyze"


def pytest_addoption(parser):
    parser.getgroup("coreanalyze").addoption(
        OPTION, dest="coreanalyze_dir", metavar="DIR", default=None,
        help="catch a crash of the test process (or an xdist worker) and write its report to DIR",
    )  # fmt: skip


def _out_dir(config) -> Path | None:
    value = config.getoption("coreanalyze_dir", default=None)
    return Path(value).absolute() if value else None


def pytest_configure(config):
    out = _out_dir(config)
    if out is None:
        return
    from coreanalyze.capture.guard import ENV, arm

    config._coreanalyze_started = time.time()
    # Processes the tests start with a fresh interpreter (xdist's workers among them) arm
    # themselves through the startup hook, or are already followed by this process's watcher.
    os.environ[ENV] = str(out)
    arm(out, by="pytest")


def pytest_runtest_logstart(nodeid, location):
    out = _armed()
    if out is not None:
        from coreanalyze.capture.context import note_running_test

        note_running_test(out, os.getpid(), nodeid)


def pytest_runtest_logfinish(nodeid, location):
    out = _armed()
    if out is not None:
        from coreanalyze.capture.context import note_running_test

        note_running_test(out, os.getpid(), None)


def _armed() -> Path | None:
    from coreanalyze.capture.guard import armed_dir

    return armed_dir()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    out = _out_dir(config)
    started = getattr(config, "_coreanalyze_started", None)
    if out is None or started is None:
        return
    from coreanalyze.capture.summary import crashes_since

    crashes = crashes_since(out, started)
    if not crashes:
        return
    terminalreporter.section("coreanalyze: crashes")
    for crash in crashes:
        terminalreporter.line(f"{crash.test or f'process {crash.pid}'}: {crash.verdict}")
        terminalreporter.line(f"    report: {crash.report}")
