"""Hostile and broken cores: the tool stays safe and useful.

- Fuzz: real kernel cores mutated deterministically (tests/fuzzcore.py) — truncated, with
  absurd header fields, sizes and counts — go through the notes reader in-process and through
  the real command line with a real gdb: no traceback, no hang, exit 0/2/3, a JSON report that
  says what could not be read. A quick subset covering every kind of damage runs by default,
  every case when CI=true (or COREANALYZE_FUZZ_ALL=1). The command-line runs are independent:
  two go at a time on threads of their own (fuzz_runs), each test checking its own case's run.
- gdb contained: init files, auto-load scripts, debuginfod, the address-space limit.
- Safe output through the CLI: payloads in the executable's name and the command line are
  escaped, environment values stay out of the report unless --include-env, report file names
  derived from a core's name cannot leave the working directory or write through a planted link.
- Large cores: a multi-gigabyte sparse core is analyzed with the Python process's peak memory
  bounded.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from support.clirun import REPO, run_cli
from support.coregen import compile_c, run_to_core
from support.fuzzcore import FLOODS, CoreLayout, Mutation, all_cases, environment_flag, quick_cases
from support.paths import CRASHERS
from support.require import require
from support.safety import assert_safe_html, assert_safe_markdown

from coreanalyze.base.errors import BadInput
from coreanalyze.base.model import report_from_dict
from coreanalyze.base.safenames import report_filename
from coreanalyze.corefile import read_core, threads_from_notes, to_core_info
from coreanalyze.corefile.modules import module_table
from coreanalyze.gdb.session import GdbSession
from coreanalyze.render import render

FULL = os.environ.get("CI") == "true" or environment_flag("COREANALYZE_FUZZ_ALL")
FUZZ_BASES = ("null_thread", "double_free", "killed")
ALL_CASES = all_cases(FUZZ_BASES)
FUZZ_CASES = ALL_CASES if FULL else quick_cases(ALL_CASES)
GDB_TIMEOUT = 20  # the tool's --timeout for the whole gdb analysis
CLI_TIMEOUT = 120  # the test's own limit on one run: well above --timeout

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
JS_LINK = "](javascript:alert(1))"
TICKS = "`id` ``` ````"
ANSI = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred"
HOSTILE_EXE_NAME = f"x{IMG}"
HOSTILE_ARGS = [SCRIPT, JS_LINK, TICKS, "$(touch PWNED)", ANSI]
SECRET = "s3cr3t-do-not-leak"
EVIL_ENV_VALUE = "</textarea><script>alert(2)</script>"
SAFE_REPORT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*\.(html|json|md|txt)$")


def test_the_fuzz_corpus_is_large_and_deterministic():
    assert len(ALL_CASES) >= 200
    assert len({c.id for c in ALL_CASES}) == len(ALL_CASES)
    assert {c.kind for c in quick_cases(ALL_CASES)} == {c.kind for c in ALL_CASES}
    assert len(quick_cases(ALL_CASES)) <= 30


# ============================================================================================
# Fuzz
# ============================================================================================


@pytest.fixture(scope="module")
def fuzz_bases(cores):
    """base name -> (layout of its pristine core, the crash that made it), built on first use."""
    cache: dict[str, tuple[CoreLayout, object]] = {}

    def get(name: str):
        if name not in cache:
            crash = cores.c_crash(name)
            cache[name] = (CoreLayout.read(crash.core), crash)
        return cache[name]

    return get


def _warned(warnings: list[str], mutation: Mutation) -> bool:
    if not warnings:
        return False
    return not mutation.warn_any or any(word in w for w in warnings for word in mutation.warn_any)


def _read_in_process(core: Path, mutation: Mutation) -> list[str] | None:
    """The notes stage on the damaged core: its warnings, or None when it is refused as bad input."""
    try:
        notes = read_core(core)
    except BadInput as exc:
        assert "\n" not in str(exc), str(exc)
        return None
    with notes:
        module_table(notes)
        threads_from_notes(notes)
        to_core_info(notes)
        warnings = list(notes.warnings)
    if mutation.must_warn:
        assert _warned(warnings, mutation), f"{mutation.description}: nothing said about it in {warnings}"
    return warnings


def _run_damaged(case, layout, crash, where: Path):
    """The damaged core written at `where`/core.fuzz and the command line's run on it."""
    mutation = case.mutation(layout)
    core = mutation.write(layout.data, where / "core.fuzz")
    # Every fourth case leaves the executable to the core, so damaged paths reach gdb.
    python = [] if case.stable_hash % 4 == 0 else ["--python", str(crash.exe)]
    try:
        run = run_cli(str(core), *python, "--format", "json", "-o", "-", "--timeout", str(GDB_TIMEOUT),
                      cwd=where, timeout=CLI_TIMEOUT)  # fmt: skip
    except subprocess.TimeoutExpired:
        run = None
    return mutation, core, run


@pytest.fixture(scope="module")
def fuzz_runs(fuzz_bases, tmp_path_factory, request):
    """`fuzz_runs(case)` -> (mutation, core, run): the command line's run on the damaged core
    (run None: no answer within CLI_TIMEOUT). The selected cases' runs start at the module's
    first test, two at a time; each core stays until its test has read it too."""
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fuzz")
    started: dict[str, Future] = {}

    def start(case) -> Future:
        if case.id not in started:
            layout, crash = fuzz_bases(case.base)  # built here, on the test's thread
            where = tmp_path_factory.mktemp("fuzz")
            started[case.id] = pool.submit(_run_damaged, case, layout, crash, where)
        return started[case.id]

    for item in request.session.items:
        case = getattr(getattr(item, "callspec", None), "params", {}).get("case")
        if item.module is request.module and case is not None:
            start(case)
    yield lambda case: start(case).result()
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("case", FUZZ_CASES, ids=lambda c: c.id)
def test_damaged_core(case, fuzz_runs):
    mutation, core, run = fuzz_runs(case)
    try:
        notes_warnings = _read_in_process(core, mutation)
        if run is None:
            pytest.fail(f"{case.id} ({mutation.description}): no answer within {CLI_TIMEOUT}s")
    finally:
        core.unlink()
    assert run.code in (0, 2, 3), (mutation.description, run.code, run.stderr)
    assert "internal error" not in run.stderr, (mutation.description, run.stderr)

    if notes_warnings is None:
        # Refused by the notes reader: refused by the CLI with one line, and no report.
        assert run.code == 2, (mutation.description, run.stderr)
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("coreanalyze: "), run.stderr
        assert run.stdout == ""
        return

    assert run.code in (0, 3), (mutation.description, run.code, run.stderr)
    assert run.stdout.strip(), (mutation.description, "no report", run.stderr)
    report = json.loads(run.stdout)
    assert report["schema"] == "coreanalyze/1"
    assert report["core"]["path"] == str(core)
    # What the notes reader could not read is in the report, word for word.
    missing = [w for w in notes_warnings if w not in report["warnings"]]
    assert not missing, missing
    if mutation.must_warn:
        assert _warned(report["warnings"], mutation), (mutation.description, report["warnings"])
    if run.code == 3:
        assert report["warnings"], "a partial report must say why it is partial"
        assert "coreanalyze: error:" in run.stderr
    # Whatever the damage put into the report renders safely in every format.
    back = report_from_dict(report)
    assert_safe_html(render(back, "html"))
    assert_safe_markdown(render(back, "markdown"))
    assert "\x1b" not in render(back, "text")


# ============================================================================================
# gdb contained
# ============================================================================================

AUTOLOAD_CRASHER = r"""
#include <stddef.h>
/* An auto-load script carried inside the program (.debug_gdb_scripts, SECTION_SCRIPT_ID_PYTHON_TEXT). */
__asm__(".pushsection \".debug_gdb_scripts\", \"MS\",%%progbits,1\n"
        ".byte 4\n"
        ".ascii \"gdb.inlined-script\\n\"\n"
        ".ascii \"open('%(marker)s', 'w').close()\\n\"\n"
        ".byte 0\n"
        ".popsection\n");

__attribute__((noinline)) void crash_here(volatile int *p) { *p = 1; }

int main(int argc, char **argv) {
    (void)argv;
    crash_here((volatile int *)(long)(argc - 1));
    return 0;
}
"""


class Planted:
    """A crasher and its core surrounded by every kind of gdb script a user may have."""

    def __init__(self, root: Path):
        self.root = root
        self.markers = root / "markers"
        self.markers.mkdir()
        self.workdir = root / "work"
        self.workdir.mkdir()
        source = root / "autoload.c"
        source.write_text(AUTOLOAD_CRASHER % {"marker": self.markers / "inline-section-script"})
        exe = compile_c(source, self.workdir / "prog")
        self.crash = run_to_core("autoload", [str(exe)], self.workdir)
        self.exe = self.crash.exe
        # Next to the executable: objfile scripts gdb auto-loads.
        (self.workdir / "prog-gdb.py").write_text(f"open({str(self.markers / 'objfile-gdb-py')!r}, 'w').close()\n")
        (self.workdir / "prog-gdb.gdb").write_text(f"shell touch {self.markers / 'objfile-gdb-script'}\n")
        # The working directory's .gdbinit and two kinds of home directory.
        (self.workdir / ".gdbinit").write_text(f"shell touch {self.markers / 'cwd-gdbinit'}\n")
        self.home_dot = root / "home-dot"
        self.home_dot.mkdir()
        (self.home_dot / ".gdbinit").write_text(f"shell touch {self.markers / 'home-gdbinit'}\n")
        self.home_xdg = root / "home-xdg"
        (self.home_xdg / ".config" / "gdb").mkdir(parents=True)
        (self.home_xdg / ".config" / "gdb" / "gdbinit").write_text(f"shell touch {self.markers / 'xdg-gdbinit'}\n")

    def env(self, home: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"}
        env["HOME"] = str(self.home_dot if home == "dot" else self.home_xdg)
        return env

    def fired(self) -> set[str]:
        return {p.name for p in self.markers.iterdir()}

    def reset(self) -> None:
        for p in self.markers.iterdir():
            p.unlink()


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Planted:
    require("gcc")
    require("gdb")
    return Planted(tmp_path_factory.mktemp("planted"))


HOME_MARKERS = {"dot": "home-gdbinit", "xdg": "xdg-gdbinit"}
SCRIPT_MARKERS = {"inline-section-script", "objfile-gdb-py", "objfile-gdb-script", "cwd-gdbinit"}


@pytest.mark.parametrize("home", ["dot", "xdg"])
def test_planted_scripts_do_run_in_a_plain_gdb(planted, home):
    """The control: every planted script is real, a gdb without the tool's hardening runs it."""
    planted.reset()
    subprocess.run(
        [require("gdb"), "-batch", "-iex", "set auto-load safe-path /", "-ex", "bt 1", str(planted.exe), str(planted.crash.core)],
        cwd=planted.workdir, env=planted.env(home), capture_output=True, timeout=120,
    )
    assert planted.fired() == SCRIPT_MARKERS | {HOME_MARKERS[home]}


@pytest.mark.parametrize("home", ["dot", "xdg"])
def test_analysis_runs_no_init_file_and_no_auto_load_script(planted, home):
    planted.reset()
    # The executable is taken from the core: gdb is given the path that has the scripts beside it.
    run = run_cli(str(planted.crash.core), "--format", "json", "-o", "-", cwd=planted.workdir, env=planted.env(home))
    assert run.code == 0, run.stderr
    crashed = next(t for t in run.json["threads"] if t["crashed"])
    assert crashed["frames"][0]["function"] == "crash_here"  # gdb did read the program
    assert planted.fired() == set()


GDB_WRAPPER = """#!/bin/sh
# Records how the tool started gdb, then becomes the real gdb.
printf '%s\\n' "$@" > "{log}/argv"
env > "{log}/env"
exec "{gdb}" "$@"
"""


def _gdb_wrapper(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "gdb-log"
    log.mkdir()
    wrapper = tmp_path / "gdb-wrapper"
    wrapper.write_text(GDB_WRAPPER.format(log=log, gdb=require("gdb")))
    wrapper.chmod(0o755)
    return wrapper, log


@pytest.mark.parametrize("debuginfod", [False, True], ids=["default", "debuginfod"])
def test_gdb_is_started_hardened(cores, tmp_path, debuginfod):
    case = cores.c_crash("null_thread")
    wrapper, log = _gdb_wrapper(tmp_path)
    env = {"DEBUGINFOD_URLS": "http://127.0.0.1:9/", "DEBUGINFOD_TIMEOUT": "2", "PYTHONSTARTUP": "/nonexistent-startup"}
    run = run_cli(str(case.core), "--python", str(case.exe), "--gdb", str(wrapper), "--format", "json", "-o", "-",
                  *(["--debuginfod"] if debuginfod else []), cwd=tmp_path, env=env)
    assert run.code == 0, run.stderr
    assert any(f["function"] == "store_result" for t in run.json["threads"] for f in t["frames"])

    argv = (log / "argv").read_text().splitlines()
    assert "-nx" in argv and "-nh" in argv
    assert "set auto-load off" in argv
    assert f"set debuginfod enabled {'on' if debuginfod else 'off'}" in argv
    gdb_env = dict(line.split("=", 1) for line in (log / "env").read_text().splitlines() if "=" in line)
    assert ("DEBUGINFOD_URLS" in gdb_env) == debuginfod
    assert not any(name.startswith("PYTHON") for name in gdb_env)


def test_gdb_is_memory_limited_once_started():
    with GdbSession(require("gdb")) as session:
        limits = Path(f"/proc/{session.pid}/limits").read_text()  # gdb has answered one command
        assert session.console("echo ok\\n").strip() == "ok"
    address_space = next(line for line in limits.splitlines() if line.startswith("Max address space"))
    soft, hard = address_space.split()[3:5]
    assert soft == hard == str(4096 * 1024 * 1024)


@pytest.mark.parametrize("debuginfod", [False, True])
def test_session_shows_debuginfod_only_when_asked(debuginfod):
    with GdbSession(require("gdb"), debuginfod=debuginfod) as session:
        shown = session.console("show debuginfod enabled")
    setting = re.search(r'"(on|off|ask)"', shown)
    assert setting is not None, shown
    assert setting.group(1) == ("on" if debuginfod else "off")


# ============================================================================================
# Safe output
# ============================================================================================


@pytest.fixture(scope="module")
def hostile_process(tmp_path_factory):
    """null_thread.c built under an HTML-payload name, run with payload arguments and a secret
    in its environment."""
    require("gcc")
    workdir = tmp_path_factory.mktemp("hostile-process")
    exe = compile_c(CRASHERS / "null_thread.c", workdir / HOSTILE_EXE_NAME)
    env = {"API_TOKEN": SECRET, "EVIL_VALUE": EVIL_ENV_VALUE}
    return run_to_core("hostile-process", [str(exe), *HOSTILE_ARGS], workdir, env=env)


def _fresh_dir(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    return d


def test_payload_names_and_arguments_are_escaped_in_html(hostile_process, tmp_path):
    out = _fresh_dir(tmp_path, "out")
    run = run_cli(str(hostile_process.core), cwd=out)  # the default: an HTML report here
    assert run.code == 0, run.stderr
    written = list(out.iterdir())
    assert len(written) == 1 and written[0].name == f"{hostile_process.core.name}.html"
    html = written[0].read_text()
    doc = assert_safe_html(html)
    assert "<img" not in html and SCRIPT not in html and "\x1b" not in html
    text = "".join(doc.text)
    assert HOSTILE_EXE_NAME in text and SCRIPT in text and JS_LINK in text
    assert "store_result" in text
    assert SECRET not in html
    assert "\x1b" not in run.stdout  # the verdict printed on the terminal


def test_payloads_are_escaped_in_markdown_and_text(hostile_process, tmp_path):
    for fmt, name in (("markdown", "r.md"), ("text", "r.txt")):
        run = run_cli(str(hostile_process.core), "--format", fmt, "-o", name, cwd=tmp_path)
        assert run.code == 0, run.stderr
        content = (tmp_path / name).read_text()
        assert SECRET not in content
        assert "\x1b" not in content
        if fmt == "markdown":
            doc = assert_safe_markdown(content)
            assert SCRIPT in "".join(doc.text)


def test_json_keeps_payloads_exact_and_environment_values_out(hostile_process, tmp_path):
    run = run_cli(str(hostile_process.core), "--format", "json", "-o", "-", cwd=tmp_path)
    assert run.code == 0, run.stderr
    assert SECRET not in run.stdout and EVIL_ENV_VALUE not in run.stdout
    report = run.json
    assert report["core"]["executable"].endswith("/" + HOSTILE_EXE_NAME)
    assert report["core"]["cmdline"] == shlex.join([str(hostile_process.exe), *HOSTILE_ARGS])
    names = report["environment"]["environment_variable_names"]
    assert "API_TOKEN" in names and "EVIL_VALUE" in names
    assert "environment_variables" not in report["environment"]


def test_include_env_shows_values_escaped(hostile_process, tmp_path):
    run = run_cli(str(hostile_process.core), "--include-env", "--format", "json", "-o", "-", cwd=tmp_path)
    assert run.code == 0, run.stderr
    values = run.json["environment"]["environment_variables"]
    assert values["API_TOKEN"] == SECRET and values["EVIL_VALUE"] == EVIL_ENV_VALUE

    run = run_cli(str(hostile_process.core), "--include-env", "-o", "env.html", cwd=tmp_path)
    assert run.code == 0, run.stderr
    html = (tmp_path / "env.html").read_text()
    doc = assert_safe_html(html)
    assert EVIL_ENV_VALUE not in html
    assert SECRET in "".join(doc.text) and EVIL_ENV_VALUE in "".join(doc.text)


PAYLOAD_SYMBOLS_CRASHER = r"""
extern void __assert_fail(const char *assertion, const char *file, unsigned int line, const char *function)
    __attribute__((noreturn));

/* A function whose symbol name is an HTML payload: GNU as accepts quoted symbol names. */
__attribute__((noinline)) void payload_function(const char *why) __asm__("\"<img src=x onerror=alert(3)>\"");
__attribute__((noinline)) void payload_function(const char *why) {
    __assert_fail(why, "</textarea><script>alert(4)</script>.c", 7, "](javascript:alert(5))");
}

int main(void) {
    payload_function("<script>alert(6)</script> `rm -rf` ``` \x1b]0;pwned\x07\x1b[2J");
    return 0;
}
"""
PAYLOAD_SYMBOL = "<img src=x onerror=alert(3)>"
PAYLOAD_ABORT = "<script>alert(6)</script>"


@pytest.fixture(scope="module")
def payload_symbols(tmp_path_factory):
    """A real abort whose culprit's symbol name and glibc abort message are payloads."""
    require("gcc")
    workdir = tmp_path_factory.mktemp("payload-symbols")
    source = workdir / "payload.c"
    source.write_text(PAYLOAD_SYMBOLS_CRASHER)
    exe = compile_c(source, workdir / "payload")
    return run_to_core("payload-symbols", [str(exe)], workdir)


def test_symbol_names_and_abort_messages_from_the_core_are_escaped(payload_symbols, tmp_path):
    core = str(payload_symbols.core)
    run = run_cli(core, "--format", "json", "-o", "-", cwd=tmp_path)
    assert run.code == 0, run.stderr
    report = run.json
    assert PAYLOAD_SYMBOL in report["classification"]["culprit"]["function"]
    assert PAYLOAD_ABORT in report["classification"]["abort_message"]

    run = run_cli(core, "-o", "r.html", cwd=tmp_path)
    assert run.code == 0, run.stderr
    assert "\x1b" not in run.stdout  # the verdict on the terminal
    html = (tmp_path / "r.html").read_text()
    doc = assert_safe_html(html)
    assert "<img" not in html and "<script" not in html and "\x1b" not in html
    text = "".join(doc.text)
    assert PAYLOAD_SYMBOL in text and PAYLOAD_ABORT in text

    run = run_cli(core, "-o", "r.md", cwd=tmp_path)
    assert run.code == 0, run.stderr
    md = (tmp_path / "r.md").read_text()
    md_doc = assert_safe_markdown(md)
    assert PAYLOAD_ABORT in "".join(md_doc.text)
    assert "\x1b" not in md

    run = run_cli(core, "-o", "r.txt", cwd=tmp_path)
    assert run.code == 0, run.stderr
    assert "\x1b" not in (tmp_path / "r.txt").read_text()


HOSTILE_CORE_NAMES = [
    "core.$(touch PWNED)",
    "core;touch PWNED;",
    "core`touch PWNED`",
    "core\nPWNED.html",
    "..core",
    ".bashrc",
    "-rf",
    "<img src=x onerror=alert(1)>",
    "\u202ecore.lmth",
    "core\x1b[31m",
    "…",
    "core ",
    " core",
    "core\"x'y\\z",
    "c" * 250,  # near NAME_MAX
]


@pytest.mark.parametrize("name", HOSTILE_CORE_NAMES, ids=lambda n: repr(n)[1:-1][:40])
def test_report_name_from_a_hostile_core_name_stays_in_cwd(cores, tmp_path, name):
    case = cores.c_crash("killed")
    inbox = _fresh_dir(tmp_path, "inbox")
    core = inbox / name
    os.link(case.core, core)  # same bytes, no copy
    out = _fresh_dir(tmp_path, "out")
    run = run_cli(str(core), "--python", str(case.exe), cwd=out)
    assert run.code == 0, run.stderr
    written = [p.name for p in out.iterdir()]
    assert len(written) == 1, written
    assert SAFE_REPORT_NAME.match(written[0]) and len(written[0]) <= 130, written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inbox", "out"]
    assert [p.name for p in inbox.iterdir()] == [name]
    assert not list(tmp_path.rglob("PWNED*"))
    assert written[0] in run.stdout


@pytest.mark.parametrize("name", ["../../etc/passwd", "..", ".", "/", "a/../../b", "\x00\x01", "~root", "$HOME", "...html"])
def test_names_from_a_core_or_a_process_make_plain_file_names(name):
    """The one function every report file name derived from a core (its file name, the
    process's name) goes through: what it returns names a file in the current directory."""
    for extension in (".html", ".json"):
        made = report_filename(name, extension)
        assert SAFE_REPORT_NAME.match(made), made
        assert os.path.dirname(made) == "" and not made.startswith(".")


def test_a_fifo_or_device_given_as_the_core_is_refused_at_once(tmp_path):
    fifo = tmp_path / "core.fifo"
    os.mkfifo(fifo)  # opening it would block forever
    device = tmp_path / "core.zero"
    device.symlink_to("/dev/zero")  # reading it would never end
    for special in (fifo, device):
        run = run_cli(str(special), "--format", "json", "-o", "-", cwd=tmp_path, timeout=60)
        assert run.code == 2, run.stderr
        assert "not a regular file" in run.stderr
        assert run.stdout == ""


def test_core_reached_through_dot_dot_path_reports_in_cwd(cores, tmp_path):
    case = cores.c_crash("killed")
    core = tmp_path / "evil.html"
    shutil.copyfile(case.core, core)
    before = (core.stat().st_size, core.stat().st_mtime_ns)
    cwd = tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    run = run_cli("../../evil.html", "--python", str(case.exe), cwd=cwd)
    assert run.code == 0, run.stderr
    assert [p.name for p in cwd.iterdir()] == ["evil.html.html"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "evil.html"]
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["b"]
    assert (core.stat().st_size, core.stat().st_mtime_ns) == before


def test_a_link_planted_at_the_report_name_is_not_written_through(cores, tmp_path):
    case = cores.c_crash("killed")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = _fresh_dir(tmp_path, "out")
    (out / f"{case.core.name}.html").symlink_to(victim)
    run = run_cli(str(case.core), "--python", str(case.exe), cwd=out)
    assert run.code == 0, run.stderr
    assert victim.read_text() == "precious\n"
    report = out / f"{case.core.name}.html"
    assert report.is_file() and not report.is_symlink()
    assert report.read_text().startswith("<!DOCTYPE html>")


def test_a_link_planted_at_the_old_temporary_name_is_not_written_through(cores, tmp_path):
    """`.NAME.tmpPID` was predictable; a symlink planted there in a shared directory must not
    redirect the report onto another file."""
    case = cores.c_crash("killed")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = _fresh_dir(tmp_path, "out")
    report_name = f"{case.core.name}.html"
    planter = (
        "import os, sys\n"
        f"os.symlink({str(victim)!r}, '.{report_name}.tmp' + str(os.getpid()))\n"
        "from coreanalyze.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", planter, str(case.core), "--python", str(case.exe)],
                          cwd=out, env=env, capture_output=True, text=True, timeout=CLI_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "precious\n"
    assert (out / report_name).read_text().startswith("<!DOCTYPE html>")
    assert (out / report_name).stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_output_to_a_fifo_writes_into_it_and_leaves_it_a_fifo(cores, tmp_path):
    """-o /dev/null, /dev/stdout or a FIFO: written into, never replaced by a regular file."""
    case = cores.c_crash("killed")
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    received = tmp_path / "received.html"
    with open(received, "wb") as sink:
        reader = subprocess.Popen(["cat", str(fifo)], stdout=sink)
        try:
            run = run_cli(str(case.core), "--python", str(case.exe), "--format", "html", "-o", str(fifo), cwd=tmp_path)
            reader.wait(timeout=60)
        finally:
            if reader.poll() is None:
                reader.kill()
                reader.wait()
    assert run.code == 0, run.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert received.read_text().startswith("<!DOCTYPE html>")


# ============================================================================================
# Large cores
# ============================================================================================

BIG_CRASHER = r"""
#include <stdio.h>
#include <sys/mman.h>
#define GIB (1024UL * 1024 * 1024)
#define STRIDE (64UL * 1024 * 1024)

__attribute__((noinline)) void crash_after_touching(volatile char *p) { *(volatile int *)0 = p[0]; }

int main(void) {
    /* As big as the machine lets us map (overcommit policies differ); the pages never
       touched are dumped by the kernel as holes, so the core stays sparse on disk. */
    for (unsigned long gib = 8; gib >= 2; gib--) {
        size_t size = gib * GIB;
        char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            continue;
        for (size_t off = 0; off < size; off += STRIDE)
            p[off] = (char)(off / STRIDE + 1);
        crash_after_touching(p);
    }
    perror("mmap");
    return 1;
}
"""

# Runs the real CLI in this process and records the process's own peak memory at exit (gdb,
# its child, is not counted). VmHWM belongs to the address space, which exec starts afresh;
# ru_maxrss would carry over the peak of the forking test process.
PEAK_MEMORY_WRAPPER = """
import atexit, runpy, sys
record = sys.argv[1]
def write_peak():
    with open("/proc/self/status") as f:
        hwm_kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    with open(record, "w") as f:
        f.write(f"{hwm_kib}\\n")
atexit.register(write_peak)
sys.argv = ["coreanalyze", *sys.argv[2:]]
runpy.run_module("coreanalyze", run_name="__main__", alter_sys=True)
"""
PEAK_LIMIT_MIB = 300


def _run_measured(core: Path, *args: str, cwd: Path, timeout: float = 600) -> tuple[subprocess.CompletedProcess, int]:
    """The CLI on a core, and the peak resident memory of its Python process in KiB."""
    wrapper = cwd / "peak.py"
    wrapper.write_text(PEAK_MEMORY_WRAPPER)
    record = cwd / "peak.txt"
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(wrapper), str(record), str(core), *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, int(record.read_text())


# The default run floods the notes with empty notes and with a million-entry NT_FILE; CI adds
# threads and note segments repeated over one region.
FLOOD_NAMES = list(FLOODS) if FULL else ["empty-notes", "file-list"]


@pytest.mark.parametrize("flood", FLOOD_NAMES)
def test_note_floods_keep_memory_bounded(cores, tmp_path, flood):
    """Notes far beyond any real core's (millions of notes, a million mappings, a gigabyte
    claimed): a report with a warning, and a bounded Python process."""
    case = cores.c_crash("killed")
    layout = CoreLayout.read(case.core)
    mutation = FLOODS[flood](layout)
    core = mutation.write(layout.data, tmp_path / "core.flood")
    try:
        proc, peak_kib = _run_measured(core, "--python", str(case.exe), "--format", "json", "-o", "-", "--timeout", "10",
                                       cwd=tmp_path)
    finally:
        core.unlink()
    assert proc.returncode in (0, 3), proc.stderr
    report = json.loads(proc.stdout)
    assert _warned(report["warnings"], mutation), (mutation.description, report["warnings"])
    assert report["core"]["signal"]["name"] == "SIGSEGV"
    assert peak_kib < PEAK_LIMIT_MIB * 1024, f"{mutation.description}: peak {peak_kib // 1024} MiB"


def _holes_supported(directory: Path) -> bool:
    probe = directory / "sparse-probe"
    with open(probe, "wb") as f:
        f.truncate(64 * 1024 * 1024)
    try:
        return os.stat(probe).st_blocks * 512 < 1024 * 1024
    finally:
        probe.unlink()


def test_multi_gigabyte_sparse_core_with_bounded_memory(tmp_path):
    require("gcc")
    require("gdb")
    if not _holes_supported(tmp_path):
        pytest.fail(f"{tmp_path} does not keep files sparse; this test would write gigabytes")
    source = tmp_path / "big.c"
    source.write_text(BIG_CRASHER)
    exe = compile_c(source, tmp_path / "big")
    crash = run_to_core("big", [str(exe)], tmp_path / "run")
    core = crash.core
    try:
        st = os.stat(core)
        assert st.st_size >= 2 * 1024**3, "a multi-gigabyte core"
        assert st.st_blocks * 512 < 64 * 1024 * 1024, "the kernel wrote the untouched pages as holes"

        proc, peak_kib = _run_measured(core, "--python", str(exe), "--format", "json", "-o", "-", "--timeout", "120",
                                       cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        assert report["core"]["size"] == st.st_size
        crashed = next(t for t in report["threads"] if t["crashed"])
        assert [f["function"] for f in crashed["frames"][:2]] == ["crash_after_touching", "main"]
        assert report["classification"]["fault_kind"] == "null-deref"

        assert peak_kib < PEAK_LIMIT_MIB * 1024, f"peak {peak_kib // 1024} MiB"
        # Nothing on the way copied the core: it is still sparse.
        assert os.stat(core).st_blocks == st.st_blocks
    finally:
        core.unlink(missing_ok=True)
