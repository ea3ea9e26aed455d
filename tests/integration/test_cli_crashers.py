"""End to end through the command line on real cores of real C crashers and Python processes."""

from __future__ import annotations

import functools
import os
import re
import subprocess

import pytest
from support.clirun import analyze_json, crashed_thread, native_functions, run_cli
from support.paths import CRASHERS
from support.pythons import SYSTEM_PYTHON, require_pyenv_python

# name -> (signal, si_code name, fault kind, a function that must be the first frame of the
#          crashing thread's own code, after the noise of libc/signal frames)
EXPECTED = {
    "null_thread": ("SIGSEGV", "SEGV_MAPERR", "null-deref", "store_result"),
    "wild_write": ("SIGSEGV", "SEGV_MAPERR", "invalid-access", "write_wild"),
    "recursion": ("SIGSEGV", "SEGV_MAPERR", "stack-overflow", "recurse"),
    "assert_fail": ("SIGABRT", "SI_TKILL", "abort", "check_invariant"),
    "double_free": ("SIGABRT", "SI_TKILL", "heap-corruption", "release"),
    "divzero": ("SIGFPE", "FPE_INTDIV", "divide-by-zero", "average"),
    "ud2": ("SIGILL", "ILL_ILLOPN", "illegal-instruction", "unreachable_path"),
    "sigbus": ("SIGBUS", "BUS_ADRERR", "bus-error", "read_page"),
    "killed": ("SIGSEGV", "SI_USER", "sent-signal", "wait_forever"),
    "null_callback": ("SIGSEGV", "SEGV_MAPERR", "null-deref", "dispatch"),
}


@pytest.fixture(scope="module")
def reports(cores):
    """Each crasher's JSON report, produced once through the CLI."""
    @functools.cache
    def get(name):
        case = cores.c_crash(name)
        return case, analyze_json(case.core, "--python", str(case.exe))

    return get


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_crasher_verdict(reports, name):
    case, report = reports(name)
    sig_name, code_name, kind, own_function = EXPECTED[name]
    sig = report["core"]["signal"]
    assert report["schema"] == "coreanalyze/1"
    assert report["core"]["pid"] == case.pid or case.method == "gdb"
    assert sig["name"] == sig_name
    assert sig["code_name"] == code_name
    assert report["classification"]["fault_kind"] == kind
    thread = crashed_thread(report)
    assert thread["crashed"] is True
    functions = native_functions(thread)
    assert own_function in functions, functions
    culprit = report["classification"]["culprit"]
    if name != "killed":  # a process killed from outside did nothing wrong itself
        assert culprit["function"] == own_function or own_function in functions[: (culprit["frame_index"] or 0) + 1]
    assert report["classification"]["summary"]
    assert report["classification"]["signature"]


def test_null_deref_in_worker_thread(reports):
    case, report = reports("null_thread")
    assert report["core"]["signal"]["address"] == "0x0"
    thread = crashed_thread(report)
    assert thread["tid"] != report["core"]["pid"], "the worker thread, not the main thread, crashed"
    assert len(report["threads"]) == 2
    top = next(f for f in thread["frames"] if f["function"] == "store_result")
    source_line = (CRASHERS / "null_thread.c").read_text().splitlines().index(
        "__attribute__((noinline)) void store_result(struct job *j, int value) { *j->target = value; }"
    ) + 1
    assert top["file"].endswith("null_thread.c") and top["line"] == source_line
    assert top["module"] == str(case.exe)
    assert report["classification"]["culprit"]["function"] == "store_result"


def test_wild_write_address(reports):
    _, report = reports("wild_write")
    assert report["core"]["signal"]["address"] == "0x1ead0000bee8"


def test_abort_messages(reports):
    _, assert_report = reports("assert_fail")
    assert "queue length went negative" in assert_report["classification"]["abort_message"]
    _, free_report = reports("double_free")
    assert "double free" in free_report["classification"]["abort_message"]
    assert free_report["classification"]["category"] == "allocator"


def test_illegal_instruction_is_shown(reports):
    _, report = reports("ud2")
    assert "ud2" in report["fault_instruction"]


def test_sender_pid_of_killed_process(reports):
    _, report = reports("killed")
    assert report["core"]["signal"]["sender_pid"] == os.getpid()
    assert str(os.getpid()) in report["classification"]["summary"]


def test_default_run_prints_verdict_and_writes_html(cores, tmp_path):
    case = cores.c_crash("null_thread")
    run = run_cli(str(case.core), "--python", str(case.exe), cwd=tmp_path)
    assert run.code == 0, run.stderr
    html_path = tmp_path / (case.core.name + ".html")
    assert html_path.is_file()
    assert "SIGSEGV" in run.stdout and "null-deref" in run.stdout and "store_result" in run.stdout
    assert str(html_path.name) in run.stdout
    html = html_path.read_text()
    assert "store_result" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "the report must not load anything"


def test_executable_taken_from_core(cores):
    case = cores.c_crash("divzero")
    report = analyze_json(case.core)
    assert report["core"]["executable"] == str(case.exe)
    assert "average" in native_functions(crashed_thread(report))


def test_mismatched_python_warns(cores):
    case = cores.c_crash("divzero")
    other = cores.c_crash("ud2").exe
    run = run_cli(str(case.core), "--python", str(other), "--format", "json", "-o", "-")
    assert run.code == 0
    assert "not the program that dumped this core" in run.stderr
    assert any("not the program" in w for w in run.json["warnings"])


@pytest.mark.parametrize("python", ["pyenv", "system"])
def test_python_ctypes_crash(cores, python):
    exe = require_pyenv_python("11") if python == "pyenv" else SYSTEM_PYTHON
    assert exe.exists(), f"{python} CPython 3.11 missing"
    case = cores.python_crash(f"ctypes_{python}", exe, CRASHERS / "ctypes_crash.py")
    report = analyze_json(case.core, "--python", str(exe))
    assert report["core"]["signal"]["name"] == "SIGSEGV"
    assert report["classification"]["fault_kind"] == "null-deref"
    assert report["classification"]["category"] == "python-runtime"
    thread = crashed_thread(report)
    python_functions = [f["function"] for f in thread["frames"] if f["kind"] == "python"]
    assert python_functions[:4] == ["string_at", "read_config", "main", "<module>"], python_functions


def test_user_rules_file_through_the_cli(cores, tmp_path):
    """A team's own rule (their library's function names) decides the category and advice."""
    case = cores.c_crash("null_thread")
    rules = tmp_path / "team.toml"
    rules.write_text(
        '[[rule]]\nname = "team-result-store"\ncategory = "tf-runtime"\npriority = 99\n'
        'function = "^store_result$"\ndescription = "our result store"\n\n'
        '[[advice]]\ncategory = "tf-runtime"\ntext = "Page the storage team: store_result crashed."\n'
    )
    report = analyze_json(case.core, "--python", str(case.exe), "--rules", str(rules))
    c = report["classification"]
    assert c["category"] == "tf-runtime"
    assert any("team-result-store" in e for e in c["evidence"])
    assert c["advice"][0] == "Page the storage team: store_result crashed."
    bad = tmp_path / "bad.toml"
    bad.write_text("[[rule]]\nname = 1\n")
    run = run_cli(str(case.core), "--python", str(case.exe), "--rules", str(bad), cwd=tmp_path)
    assert run.code == 2 and "bad.toml" in run.stderr


def test_user_rules_add_a_category_with_its_advice(cores, tmp_path):
    """A team's subsystem that is none of the built-in categories: declared, matched, advised."""
    case = cores.c_crash("null_thread")
    rules = tmp_path / "media.toml"
    rules.write_text(
        '[[category]]\nname = "media-pipeline"\ndescription = "our decoders"\n\n'
        '[[rule]]\nname = "media-store"\ncategory = "media-pipeline"\npriority = 99\nfunction = "^store_result$"\n\n'
        '[[advice]]\ncategory = "media-pipeline"\ntext = "Page the media team: their result store crashed."\n'
    )
    report = analyze_json(case.core, "--python", str(case.exe), "--rules", str(rules))
    c = report["classification"]
    assert c["category"] == "media-pipeline"
    assert c["advice"][0] == "Page the media team: their result store crashed."
    # Without the declaration the same rule is bad input, named in one line.
    undeclared = tmp_path / "undeclared.toml"
    undeclared.write_text(rules.read_text().split("[[rule]]", 1)[1].join(["[[rule]]", ""]))
    run = run_cli(str(case.core), "--python", str(case.exe), "--rules", str(undeclared), cwd=tmp_path)
    assert run.code == 2 and "unknown category 'media-pipeline'" in run.stderr


def test_locals_on_request(cores):
    exe = require_pyenv_python("11")
    case = cores.python_crash("ctypes_pyenv", exe, CRASHERS / "ctypes_crash.py")
    plain = crashed_thread(analyze_json(case.core, "--python", str(exe)))
    assert all(f["locals"] is None for f in plain["frames"] if f["kind"] == "python")
    thread = crashed_thread(analyze_json(case.core, "--python", str(exe), "--locals"))
    frames = {f["function"]: f for f in thread["frames"] if f["kind"] == "python"}
    assert frames["read_config"]["locals"] == {"address": "16"}
    assert frames["main"]["locals"] == {"values": "<list of 3 items>"}


def test_call_through_null_function_pointer_blames_the_caller(reports):
    _, report = reports("null_callback")
    c = report["classification"]
    assert c["culprit"]["function"] == "dispatch"
    assert "function pointer" in c["summary"]
    assert any("jumped to 0x0" in e for e in c["evidence"])


@pytest.mark.parametrize("base", ["pyenv", "system"])
def test_python_crash_in_a_virtual_environment(cores, tmp_path_factory, base):
    """Users' programs run from a venv: the core names the base binary behind venv/bin/python,
    and `--python venv/bin/python` (or no --python at all) must analyze it as that binary."""
    base_exe = require_pyenv_python("11") if base == "pyenv" else SYSTEM_PYTHON
    assert base_exe.exists(), f"{base} CPython 3.11 missing"
    venv = tmp_path_factory.mktemp(f"venv-{base}") / "venv"
    subprocess.run([str(base_exe), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    venv_python = venv / "bin" / "python"
    case = cores.python_crash(f"ctypes_venv_{base}", venv_python, CRASHERS / "ctypes_crash.py")
    for args in (["--python", str(venv_python)], []):
        run = run_cli(str(case.core), *args, "--format", "json", "-o", "-")
        assert run.code == 0, run.stderr
        report = run.json
        assert report["core"]["executable"] == str(base_exe.resolve())
        assert not any("not the program" in w for w in report["warnings"]), report["warnings"]
        assert report["classification"]["category"] == "python-runtime"
        thread = crashed_thread(report)
        python_functions = [f["function"] for f in thread["frames"] if f["kind"] == "python"]
        assert python_functions[:4] == ["string_at", "read_config", "main", "<module>"], python_functions
