"""GdbSession against a real gdb: hardening, quoting, errors, timeouts, a dying gdb."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from support.require import require

from coreanalyze.base.errors import GdbError, GdbTimeout
from coreanalyze.gdb.session import GdbSession, mi_quote


@pytest.fixture(scope="module")
def gdb_path() -> str:
    return require("gdb")


def live_group_members(pgid: int) -> list[int]:
    """Processes of a process group that are still running (zombies have already died)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may contain spaces and parentheses: split after its last ')'.
        fields = stat.rsplit(")", 1)[1].split()
        state, group = fields[0], int(fields[2])
        if group == pgid and state not in ("Z", "X"):
            alive.append(int(entry.name))
    return alive


def wait_until_group_gone(pgid: int, attempts: int = 50) -> list[int]:
    members = live_group_members(pgid)
    for _ in range(attempts):
        if not members:
            break
        time.sleep(0.1)
        members = live_group_members(pgid)
    return members


def test_mi_quote_escapes_quotes_and_backslashes():
    assert mi_quote('a "b" \\c') == '"a \\"b\\" \\\\c"'
    assert mi_quote("/tmp/with space") == '"/tmp/with space"'
    with pytest.raises(GdbError):
        mi_quote("two\nlines")


def test_missing_gdb_binary_is_a_gdb_error(tmp_path):
    with pytest.raises(GdbError, match="gdb not found"):
        GdbSession(gdb_path=str(tmp_path / "no-such-gdb")).start()


def test_hardening_settings_are_in_place(gdb_path):
    with GdbSession(gdb_path) as s:
        assert "none" in s.console("show demangle-style")
        assert "off" in s.console("show debuginfod enabled")
        assert "off" in s.console("show pagination")
        assert "off" in s.console("show confirm")
        assert "none" in s.console("show print frame-arguments")
        limits = Path(f"/proc/{s.pid}/limits").read_text()
        address_space = next(line for line in limits.splitlines() if line.startswith("Max address space"))
        assert str(4096 * 1024 * 1024) in address_space


def test_python_environment_of_the_caller_does_not_break_gdb(gdb_path, monkeypatch):
    # A PYTHONHOME pointing nowhere makes an embedded interpreter fail to start.
    monkeypatch.setenv("PYTHONHOME", "/nonexistent/python-home")
    monkeypatch.setenv("PYTHONPATH", "/nonexistent/python-path")
    with GdbSession(gdb_path) as s:
        assert s.console('python print("embedded python works")') == "embedded python works\n"


def test_console_round_trips_quotes_and_backslashes(gdb_path):
    with GdbSession(gdb_path) as s:
        assert s.console('echo say "hi" \\\\ there\\n') == 'say "hi" \\ there\n'
        assert s.last_console == 'say "hi" \\ there\n'


def test_error_record_raises_gdb_error_with_its_message(gdb_path):
    with GdbSession(gdb_path) as s:
        with pytest.raises(GdbError, match="Undefined MI command"):
            s.mi("-no-such-command")
        # The session is still usable after an ^error.
        assert "features" in s.mi("-list-features")


def test_load_core_from_paths_with_spaces_and_quotes(cores, gdb_path, tmp_path):
    case = cores.c_crash("null_thread")
    odd = tmp_path / 'dir with "quotes" and spaces'
    odd.mkdir()
    exe = odd / "the program"
    core = odd / "core 'single' \"double\""
    shutil.copy(case.exe, exe)
    shutil.copy(case.core, core)
    with GdbSession(gdb_path) as s:
        s.load(core, executable=exe, sysroot="/", debug_dirs=["/usr/lib/debug", str(odd)])
        assert "SIGSEGV" in s.last_console
        assert str(odd) in s.console("show debug-file-directory")
        info = s.mi("-thread-info")
        current = next(t for t in info["threads"] if t["id"] == info["current-thread-id"])
        assert current["frame"]["func"] == "store_result"
        assert str(core) in s.console("info target")


def test_source_runs_a_python_script(gdb_path, tmp_path):
    script_dir = tmp_path / "scripts dir"
    script_dir.mkdir()
    script = script_dir / "hello.py"
    script.write_text('import gdb\ngdb.write("script ran\\n")\n')
    with GdbSession(gdb_path) as s:
        assert s.source(script) == "script ran\n"


def test_command_timeout_kills_gdb_and_everything_it_started(gdb_path):
    s = GdbSession(gdb_path)
    s.start()
    pgid = s.pid
    with pytest.raises(GdbTimeout):
        s.mi('-interpreter-exec console "shell sleep 30"', timeout=1)
    assert not s.alive
    assert wait_until_group_gone(pgid) == []
    with pytest.raises(GdbError):
        s.mi("-list-features")


def test_session_deadline_bounds_all_commands(gdb_path):
    with GdbSession(gdb_path, timeout=2, command_timeout=30) as s:
        with pytest.raises(GdbTimeout, match="session"):
            s.console("shell sleep 10")
        assert not s.alive


def test_gdb_that_dies_mid_session_is_an_error_not_a_hang(gdb_path):
    with GdbSession(gdb_path, command_timeout=30) as s:
        os.kill(s.pid, signal.SIGKILL)
        with pytest.raises(GdbError) as raised:
            s.mi("-thread-info")
        assert not isinstance(raised.value, GdbTimeout)
        assert "died" in str(raised.value)


def test_gdb_killed_while_answering_is_an_error(gdb_path):
    with GdbSession(gdb_path, command_timeout=30) as s:
        with pytest.raises(GdbError) as raised:
            s.console("shell kill -9 $PPID; sleep 30")
        assert not isinstance(raised.value, GdbTimeout)


def test_close_ends_gdb(gdb_path):
    s = GdbSession(gdb_path)
    s.start()
    pgid = s.pid
    assert s.alive
    s.close()
    assert not s.alive
    assert wait_until_group_gone(pgid) == []
    s.close()  # closing twice is harmless


def test_answers_sent_for_later_are_collected_in_order_before_the_next_command(gdb_path):
    with GdbSession(gdb_path, command_timeout=30) as s:
        s.send_later(f"-interpreter-exec console {mi_quote('echo first')}")
        s.send_later(f"-interpreter-exec console {mi_quote('echo second')}")
        assert s.pending == 2
        # The next command's output is its own, however the answers arrived.
        assert s.console("echo third") == "third"
        assert s.pending == 0
        s.send_later("-gdb-show width")
        s.finish_pending()
        assert s.pending == 0 and s.console("echo fourth") == "fourth"


def test_an_error_answer_sent_for_later_surfaces_at_the_next_command(gdb_path):
    with GdbSession(gdb_path, command_timeout=30) as s:
        s.send_later("-no-such-command")
        s.send_later(f"-interpreter-exec console {mi_quote('shell sleep 0.2; echo read too')}")
        with pytest.raises(GdbError, match="no-such-command"):
            s.mi("-list-features")
        assert s.pending == 0 and s.alive
        assert s.console("echo next") == "next"  # the answer after the error was read with it
        s.send_later("-no-such-command", ignore_error=True)
        assert s.console("echo after") == "after"


def test_an_answer_sent_for_later_that_never_comes_is_a_timeout_not_a_hang(gdb_path):
    s = GdbSession(gdb_path, command_timeout=1)
    s.start()
    pgid = s.pid
    s.send_later(f"-interpreter-exec console {mi_quote('shell sleep 30')}", ignore_error=True)
    with pytest.raises(GdbTimeout, match="shell sleep 30"):
        s.mi("-list-features")
    assert not s.alive and s.pending == 0
    assert wait_until_group_gone(pgid) == []


def test_a_gdb_that_dies_with_answers_pending_is_an_error(gdb_path):
    with GdbSession(gdb_path, command_timeout=30) as s:
        s.send_later(f"-interpreter-exec console {mi_quote('shell kill -9 $PPID; sleep 30')}", ignore_error=True)
        with pytest.raises(GdbError) as raised:
            s.finish_pending()
        assert not isinstance(raised.value, GdbTimeout)
        assert not s.alive and s.pending == 0
