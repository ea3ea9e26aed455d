"""The crash watcher's parts that need no crash: exit statuses as a shell gives them, names of
processes, the reporter's messages, the test a process runs, the report of a process that left no
core. (Its /proc readers are tested with the watcher: tests/integration/test_capture.py.)"""

from __future__ import annotations

import json
import os
import signal
import time

from coreanalyze.capture.context import capture_info, note_running_test, running_test
from coreanalyze.capture.killed import report_without_core
from coreanalyze.capture.requests import CrashReply, CrashRequest
from coreanalyze.capture.run import shell_status
from coreanalyze.capture.summary import crashes_since
from coreanalyze.capture.watcher import process_name
from coreanalyze.render import render


def _status_of(action) -> int:
    pid = os.fork()
    if pid == 0:
        action()
        os._exit(0)
    return os.waitpid(pid, 0)[1]


def test_exit_statuses_are_the_shells():
    assert shell_status(_status_of(lambda: os._exit(3))) == 3
    assert shell_status(_status_of(lambda: os.kill(os.getpid(), signal.SIGUSR1))) == 128 + signal.SIGUSR1
    assert shell_status(None) == 0


def test_process_names_say_what_ran():
    assert process_name(["/usr/bin/python3", "/srv/train.py", "--epochs", "3"]) == "train.py"
    assert process_name(["python3.11", "-m", "ipykernel_launcher", "-f", "x.json"]) == "ipykernel_launcher"
    assert process_name(["python3", "-c", "import x"]) == "python3"
    assert process_name(["../../etc/passwd"]) == "passwd"
    assert process_name([]) == "process"


def test_requests_and_replies_cross_the_pipe_whole():
    request = CrashRequest(pid=12, argv=["python", "x.py"], core="/tmp/core.x.12", signal=11, handler_ran=True, out_dir="/tmp")
    assert CrashRequest.from_line(request.to_line()) == request
    reply = CrashReply(12, verdict="SIGSEGV ...", html="/tmp/a.html")
    assert CrashReply.from_line(reply.to_line()) == reply


def test_the_running_test_is_read_by_pid_only(tmp_path):
    note_running_test(tmp_path, 4242, "tests/test_x.py::test_y[1]")
    assert running_test(tmp_path, 4242) == "tests/test_x.py::test_y[1]"
    note_running_test(tmp_path, 4242, None)
    assert running_test(tmp_path, 4242) is None


def test_a_process_killed_by_sigkill_is_reported_without_a_core(tmp_path):
    status = _status_of(lambda: os.kill(os.getpid(), signal.SIGKILL))
    request = CrashRequest(pid=77, argv=["python3", "train.py"], died=status, killed=True, oom_kills=1, peak_rss=300 << 20,
                           cgroup_limit=256 << 20, out_dir=str(tmp_path))  # fmt: skip
    report = report_without_core(request)
    report.capture = capture_info(request, "run")
    assert report.classification.fault_kind == "out-of-memory" and report.capture.died == "SIGKILL"
    assert "OOM killer" in report.classification.summary and "300 MiB" in report.classification.summary
    (tmp_path / "killed.train.py.77.json").write_text(render(report, "json"))  # checked against the schema
    caught = crashes_since(tmp_path, time.time() - 60)
    assert [(c.pid, c.by) for c in caught] == [(77, "run")] and "OOM killer" in caught[0].verdict
    assert json.loads((tmp_path / "killed.train.py.77.json").read_text())["source"] == "capture"
