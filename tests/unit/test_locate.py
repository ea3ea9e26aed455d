"""The parts of `coreanalyze last` that read text: core_pattern's specifiers as a glob, the
reasons no core was found (from a laid-out system root), coredumpctl's JSON list, and the
fields of an apport report."""

from __future__ import annotations

import io

import pytest

from coreanalyze.base.errors import BadInput
from coreanalyze.corefile.apportcrash import CoreDumpReader, read_fields
from coreanalyze.locate.coredumpctl import parse_list
from coreanalyze.locate.pattern import FilePattern, PipePattern, directory_of, parse
from coreanalyze.locate.system import SystemPaths
from coreanalyze.locate.why import why_none


@pytest.mark.parametrize(
    ("pattern", "uses_pid", "pid", "exe", "expected"),
    [
        ("core", False, None, None, "core"),
        ("core", True, None, None, "core.*"),
        ("core", True, 42, None, "core.42"),
        ("/var/cores/core.%e.%p.%t", False, None, None, "/var/cores/core.*.*.*"),
        ("/var/cores/core.%e.%p.%t", False, 42, "python3", "/var/cores/core.python3.42.*"),
        ("/c/%E-%s-%u-%g-%c-%d-%i-%I-%P-%f", False, None, None, "/c/*-*-*-*-*-*-*-*-*-*"),
        ("/c/core.%e", False, None, "a_very_long_program_name", "/c/core.a_very_long_pro"),  # %e: 15 characters
        ("/c/100%%.%p", False, 7, None, "/c/100%.7"),
        ("/c/core[1].%p", False, None, None, "/c/core[[]1].*"),  # the pattern's own glob characters are literal
    ],
)
def test_file_patterns_become_globs(pattern, uses_pid, pid, exe, expected):
    parsed = parse(pattern, uses_pid, pid, exe)
    assert isinstance(parsed, FilePattern)
    assert parsed.glob == expected


def test_pipe_patterns_name_their_program():
    apport = parse("|/usr/share/apport/apport -p%p -s%s -c%c -d%d -P%P -u%u -g%g -- %E")
    assert isinstance(apport, PipePattern) and apport.is_apport and apport.program == "/usr/share/apport/apport"
    systemd = parse("|/usr/lib/systemd/systemd-coredump %P %u %g %s %t 9223372036854775808 %h")
    assert isinstance(systemd, PipePattern) and systemd.is_systemd_coredump


def test_a_patterns_directory_is_above_its_wildcards():
    assert directory_of(parse("/var/cores/%e/core.%p")) == "/var/cores"
    assert directory_of(parse("core")) == "."


def _root(tmp_path, pattern: str) -> SystemPaths:
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/core_pattern").write_text(pattern + "\n")
    return SystemPaths(tmp_path)


def test_why_a_core_limit_of_zero_comes_first(tmp_path):
    system = _root(tmp_path, "core")
    assert "ulimit -c unlimited" in why_none(system, parse("core"), core_limit=0)
    assert "ulimit" not in why_none(system, parse("core"), core_limit=-1)


def test_why_a_pipe_to_a_program_that_is_not_here(tmp_path):
    system = _root(tmp_path, "|/usr/lib/systemd/systemd-coredump %P")
    line = why_none(system, parse(system.core_pattern()), core_limit=0)  # the limit does not apply to pipes
    assert "not here" in line and "host" in line and "coreanalyze run" in line


def test_why_apport_skipped_an_unpackaged_executable(tmp_path):
    system = _root(tmp_path, "|/usr/share/apport/apport -p%p -- %E")
    (tmp_path / "usr/share/apport").mkdir(parents=True)
    (tmp_path / "usr/share/apport/apport").write_text("")
    (tmp_path / "var/log").mkdir(parents=True)
    (tmp_path / "var/log/apport.log").write_text(
        "INFO: apport (pid 812) 2026-11-29 06:12:01,118: executable: /opt/venv/bin/python3.11 (command line \"python train.py\")\n"
        "ERROR: apport (pid 812) 2026-11-29 06:12:01,121: executable does not belong to a package, ignoring\n"
    )
    line = why_none(system, parse(system.core_pattern()))
    assert "does not belong to a package" in line and "unpackaged=true" in line


def test_coredumpctls_json_list():
    text = (
        '[{"time":1764398400000000,"pid":4242,"uid":1000,"gid":1000,"sig":11,"corefile":"present",'
        '"exe":"/usr/bin/python3.12","size":1234},'
        '{"time":1764398500000000,"pid":4243,"uid":1000,"gid":1000,"sig":6,"corefile":"missing","exe":"/usr/bin/x"},'
        '{"pid":"not a number"}]'
    )
    entries = parse_list(text)
    assert [(e.pid, e.present, e.exe) for e in entries] == [(4242, True, "/usr/bin/python3.12"), (4243, False, "/usr/bin/x")]
    assert entries[0].time == 1764398400.0
    assert parse_list("No coredumps found.") == []


REPORT = b"""ProblemType: Crash
Date: Sun Nov 29 06:12:01 2026
ExecutablePath: /opt/train/run.py
InterpreterPath: /usr/bin/python3.11
ProcCmdline: python3 /opt/train/run.py --epochs 3
ProcStatus:
 Name:\tpython3
 Pid:\t4242
ProcMaps:
 00400000-00401000 r-xp 00000000 08:01 1 /usr/bin/python3.11
Stacktrace:
 #0  0x00007f in PyObject_Free () from /usr/lib/libpython3.11.so
CoreDump: base64
 H4sICAAAAAAC/0NvcmVEdW1wAA==
 80jNyclXKM8vyklRBAA=
"""


def test_an_apport_reports_fields():
    fields = read_fields(io.BytesIO(REPORT), "r.crash")
    assert fields.has_core
    assert fields.pid == 4242
    assert fields.fields["ProcCmdline"] == "python3 /opt/train/run.py --epochs 3"
    assert fields.fields["ProcMaps"].endswith("/usr/bin/python3.11")
    assert "Stacktrace" not in fields.fields and "CoreDump" not in fields.fields


def test_a_report_without_a_core_and_a_file_that_is_not_one():
    without = REPORT.split(b"CoreDump:")[0]
    assert not read_fields(io.BytesIO(without), "r.crash").has_core
    with pytest.raises(BadInput, match="no CoreDump field.*coreanalyze triage r.crash"):
        CoreDumpReader(io.BytesIO(without), "r.crash").read()
    with pytest.raises(BadInput, match="not an apport crash report"):
        read_fields(io.BytesIO(b"ProblemType: Crash\nthis is no field\n"), "x.crash")
