"""Bad input gets one clear line on stderr and the documented exit code, never a traceback."""

from __future__ import annotations

import shutil
import stat

from support.clirun import run_cli


def one_line(stderr: str) -> str:
    lines = [l for l in stderr.splitlines() if l.strip() and "warning:" not in l]
    assert len(lines) == 1, stderr
    return lines[0]


def test_missing_file(tmp_path):
    run = run_cli(str(tmp_path / "core.nope"))
    assert run.code == 2
    assert "no such file" in one_line(run.stderr).lower()


def test_directory(tmp_path):
    run = run_cli(str(tmp_path))
    assert run.code == 2
    assert "directory" in one_line(run.stderr)


def test_text_file(tmp_path):
    text = tmp_path / "core.txt"
    text.write_text("this is not a core\n" * 10)
    run = run_cli(str(text))
    assert run.code == 2
    assert "not an ELF" in one_line(run.stderr)


def test_elf_that_is_not_a_core(tmp_path):
    run = run_cli(shutil.which("ls"), cwd=tmp_path)
    assert run.code == 2
    assert "not a core" in one_line(run.stderr)


def test_empty_file(tmp_path):
    empty = tmp_path / "core.0"
    empty.write_bytes(b"")
    run = run_cli(str(empty))
    assert run.code == 2
    assert "empty" in one_line(run.stderr)


def test_core_of_another_architecture(cores, tmp_path):
    case = cores.c_crash("divzero")
    other = tmp_path / "core.arm"
    data = bytearray(case.core.read_bytes())
    data[18:20] = (20).to_bytes(2, "little")  # e_machine = EM_PPC
    other.write_bytes(bytes(data))
    run = run_cli(str(other), "--python", str(case.exe))
    assert run.code == 2
    assert "architecture" in one_line(run.stderr).lower() or "PowerPC" in run.stderr


def test_truncated_core_gives_partial_report(cores, tmp_path):
    case = cores.c_crash("null_thread")
    data = case.core.read_bytes()
    cut = tmp_path / "core.cut"
    cut.write_bytes(data[: len(data) // 3])
    run = run_cli(str(cut), "--python", str(case.exe), "--format", "json", "-o", "-", cwd=tmp_path)
    assert run.code in (0, 3), run.stderr
    report = run.json
    assert report["core"]["signal"]["name"] == "SIGSEGV"
    assert any("truncated" in w for w in report["warnings"])


def test_wrong_python_not_a_program(cores, tmp_path):
    case = cores.c_crash("divzero")
    script = tmp_path / "python3"
    script.write_text("#!/bin/sh\nexec python3 \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    run = run_cli(str(case.core), "--python", str(script), cwd=tmp_path)
    assert run.code == 2
    assert "not an ELF" in one_line(run.stderr)


def test_wrong_python_missing(cores, tmp_path):
    case = cores.c_crash("divzero")
    run = run_cli(str(case.core), "--python", str(tmp_path / "nope"), cwd=tmp_path)
    assert run.code == 2
    assert "no such file" in one_line(run.stderr)


def test_gdb_not_installed_reports_from_notes(cores, tmp_path):
    case = cores.c_crash("null_thread")
    run = run_cli(str(case.core), "--python", str(case.exe), "--gdb", str(tmp_path / "no-gdb"),
                  "--format", "json", "-o", "report.json", cwd=tmp_path)
    assert run.code == 2
    assert "gdb" in one_line(run.stderr.replace("analysis incomplete", "warning:"))
    report = (tmp_path / "report.json").read_text()
    assert '"SIGSEGV"' in report


def test_gdb_that_hangs_is_killed(cores, tmp_path):
    case = cores.c_crash("null_thread")
    fake = tmp_path / "gdb-hangs"
    fake.write_text("#!/bin/sh\nexec sleep 600\n")
    fake.chmod(0o755)
    run = run_cli(str(case.core), "--python", str(case.exe), "--gdb", str(fake), "--timeout", "3",
                  "--format", "json", "-o", "-", cwd=tmp_path, timeout=120)
    assert run.code == 3
    assert run.json["core"]["signal"]["name"] == "SIGSEGV"
    assert any("gdb" in w for w in run.json["warnings"])


def test_gdb_that_crashes(cores, tmp_path):
    case = cores.c_crash("null_thread")
    fake = tmp_path / "gdb-crashes"
    fake.write_text("#!/bin/sh\nkill -SEGV $$\n")
    fake.chmod(0o755)
    run = run_cli(str(case.core), "--python", str(case.exe), "--gdb", str(fake),
                  "--format", "json", "-o", "-", cwd=tmp_path, timeout=120)
    assert run.code == 3
    assert run.json["crashing_thread"] != run.json["core"]["pid"]


def test_unknown_option():
    run = run_cli("--no-such-option")
    assert run.code == 2
