"""The tool itself under every Python it claims (requires-python, the README): 3.10 to 3.15.

Each interpreter gets a clean virtual environment with the package installed from its wheel,
as a user's `pip install` would give it, then
- the unit tests run under it, from the source tree (they need no test extras but pytest and
  ruff), and
- the installed `coreanalyze` analyzes a real core of a Python program that crashed under that
  same interpreter.
pyenv's CPython 3.10-3.13 and Debian's own python3 run here; CPython 3.14 and 3.15 run in the
Debian unstable root (tests/support/sidroot.py), where the analysis uses that root's own gdb, as
on a machine running Debian unstable.

The environments are independent: they are made, and the unit tests run in each, two at a time
on threads of their own from the first test of the module on (each test then reads its own
environment's results), so that both CPUs of a small machine work.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from support.paths import PYCRASHERS, REPO, SHARED_DATA
from support.pycrash import crash, interpreter, marker_line
from support.sidroot import NEWER, SidCrashes, in_root

ON_THIS_MACHINE = ["3.10", "3.11", "3.12", "3.13", "system"]
EVERY = [*ON_THIS_MACHINE, *NEWER]
# What the unit tests need beside the package (the rest of the test extras is for the
# integration tests: TensorFlow, pystack, a browser, ...; jsonschema checks every report a test
# renders against the JSON contract).
UNIT_TEST_NEEDS = ("pytest>=7", "ruff>=0.4", "jsonschema>=4")


def _tree_files() -> list[str]:
    """The repository's files (tracked, and new ones not ignored)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    return [line for line in out.splitlines() if line and (REPO / line).is_file()]


def copy_tree(dest: Path) -> Path:
    for name in _tree_files():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    return dest


def copy_shared_data(dest: Path, limit: int = 5 << 20) -> Path:
    """The shared test data the unit tests read (crash texts), without the large GPU core and
    sysroot archives only integration tests open."""
    for path in SHARED_DATA.rglob("*"):
        if path.is_file() and path.stat().st_size <= limit:
            target = dest / path.relative_to(SHARED_DATA)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The package's wheel, built once from a copy of the tree (the build leaves files behind)."""
    work = tmp_path_factory.mktemp("wheel")
    tree = copy_tree(work / "tree")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", str(tree), "-w", str(work / "dist")],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    (built,) = (work / "dist").glob("coreanalyze-*.whl")
    return built


@pytest.fixture(scope="module")
def sid():
    crashes = SidCrashes()
    yield crashes
    crashes.close()


class Environment:
    """A virtual environment of one interpreter with the wheel installed; its commands run on
    this machine, or inside the Debian unstable root."""

    def __init__(self, which: str, wheel: Path, where: Path, sid: SidCrashes | None) -> None:
        self.which, self.sid = which, sid
        if sid is None:
            self.python_here = str(interpreter(which))
            self.venv = where / f"venv-{which}"
            self.tree = REPO
        else:
            self.python_here = f"/usr/bin/python{which}"
            self.venv = sid.base / f"venv-{which}"  # the same path inside and outside
            self.tree = copy_tree(sid.base / f"tree-{which}")
            # Beside the tree, where the source tree finds it (as ../shared/data here).
            self.shared = sid.base / "shared" / "data"
            if not self.shared.exists():
                copy_shared_data(self.shared)
        wheel_copy = self.venv.parent / wheel.name
        if not wheel_copy.exists():
            shutil.copy2(wheel, wheel_copy)
        self.run(self.python_here, "-m", "venv", str(self.venv))
        self.run(str(self.venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 str(wheel_copy), *UNIT_TEST_NEEDS, timeout=900)  # fmt: skip

    def run(self, *argv: str, cwd: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
        if self.sid is not None:
            command = " ".join(_quoted(a) for a in argv)
            # CI=true reaches the tests inside too: a missing dependency there fails as here.
            env = {"COREANALYZE_SHARED_DATA": str(self.shared)}
            if "CI" in os.environ:
                env["CI"] = os.environ["CI"]
            return in_root("/bin/sh", "-c", f"cd {_quoted(str(cwd or '/'))} && exec {command}", timeout=timeout, env=env)
        # A plain environment: nothing of this test run's own virtual environment leaks in.
        env = {"PATH": f"{self.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}
        for name in ("PIP_CERT", "SSL_CERT_FILE", "PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "CI"):
            if name in os.environ:
                env[name] = os.environ[name]
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        return proc


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


class Made:
    """An environment made on a worker thread, and what its unit tests said there."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        python = str(env.venv / "bin" / "python")
        self.version = env.run(python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])").stdout.strip()
        # The source tree's tests; -p no:cacheprovider: nothing written into the tree.
        self.unit_tests: subprocess.CompletedProcess | BaseException
        try:
            self.unit_tests = env.run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit", cwd=env.tree, timeout=1200)
        except BaseException as failed:  # noqa: BLE001 - the unit-test test reports it
            self.unit_tests = failed


def _selected(request) -> list[str]:
    """The interpreters this module's selected tests run under, in their order."""
    wanted: list[str] = []
    for item in request.session.items:
        which = getattr(getattr(item, "callspec", None), "params", {}).get("which")
        if item.module is request.module and which in EVERY and which not in wanted:
            wanted.append(which)
    return wanted


@pytest.fixture(scope="module")
def environments(wheel, tmp_path_factory, request):
    """`environments("3.12")` -> Made. Every environment the selected tests need is started at
    once, two at a time (making one and running the unit tests in it is one process's work)."""
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="interpreter-env")
    started: dict[str, Future] = {}

    def start(which: str) -> Future:
        if which not in started:
            # Fixtures and pytest's temporary directories are asked for here, on the test's thread.
            sid = request.getfixturevalue("sid") if which in NEWER else None
            where = tmp_path_factory.mktemp(f"env-{which}")
            started[which] = pool.submit(lambda: Made(Environment(which, wheel, where, sid)))
        return started[which]

    for which in _selected(request):
        start(which)
    yield lambda which: start(which).result()
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("which", EVERY)
def test_unit_tests_pass_under_the_interpreter(environments, which):
    made = environments(which)
    assert which == "system" or made.version == which
    if isinstance(made.unit_tests, BaseException):
        raise made.unit_tests
    proc = made.unit_tests
    assert " passed" in proc.stdout and " failed" not in proc.stdout, proc.stdout[-3000:]


@pytest.mark.parametrize("which", EVERY)
def test_the_installed_tool_analyzes_a_core_under_the_interpreter(environments, python_cores, which):
    env = environments(which).env
    script = PYCRASHERS / "three_deep.py"
    if env.sid is None:
        case = crash(python_cores, "three_deep.py", which)
        core, script_path = case.core, case.extra["script"]
    else:
        case = env.sid.crash(f"three_deep-tool-{which}", f"/usr/bin/python{which}", script)
        core, script_path = case.core, case.extra["script"]
    tool = str(env.venv / "bin" / "coreanalyze")
    proc = env.run(tool, str(core), "--format", "json", "-o", "-", cwd=core.parent)
    report = json.loads(proc.stdout)
    crashed = next(t for t in report["threads"] if t["tid"] == report["crashing_thread"])
    python = [(f["function"].rsplit(".", 1)[-1], f["line"]) for f in crashed["frames"] if f["kind"] == "python"]
    assert python[1:] == [
        ("load_weights", marker_line(script_path, "CRASH-LINE")),
        ("build_model", marker_line(script_path, "CALL-LOAD")),
        ("train", marker_line(script_path, "CALL-BUILD")),
        ("<module>", marker_line(script_path, "CALL-TRAIN")),
    ]
    assert report["classification"]["fault_kind"] == "null-deref"
    assert "internal error" not in proc.stderr
