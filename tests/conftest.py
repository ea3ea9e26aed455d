"""Session-wide fixtures: real crashers compiled and run once per test session, cores cached."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from coregen import CRASHERS, CrashCase, compile_c, require, run_to_core  # noqa: E402

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
}

PYENV_PYTHON = Path.home() / ".pyenv/versions"
SYSTEM_PYTHON = Path("/usr/bin/python3")


def pyenv_python(minor: str) -> Path | None:
    """The pyenv-built CPython 3.<minor> on this machine, if any."""
    for d in sorted(PYENV_PYTHON.glob(f"3.{minor}.*"), reverse=True):
        exe = d / "bin" / f"python3.{minor}"
        if exe.exists():
            return exe
    return None


class CoreCache:
    """Builds each crash at most once per test session, on first use."""

    def __init__(self, root: Path):
        self.root = root
        self.cases: dict[str, CrashCase] = {}

    def c_crash(self, name: str) -> CrashCase:
        if name not in self.cases:
            source, args, sig = C_CRASHERS[name]
            workdir = self.root / name
            workdir.mkdir(parents=True, exist_ok=True)
            exe = compile_c(CRASHERS / source, workdir / name)
            self.cases[name] = run_to_core(name, [str(exe), *args], workdir, kill_after_ready=sig)
        return self.cases[name]

    def python_crash(self, name: str, python: Path, script: Path, env: dict | None = None) -> CrashCase:
        if name not in self.cases:
            workdir = self.root / name
            workdir.mkdir(parents=True, exist_ok=True)
            case = run_to_core(name, [str(python), str(script)], workdir, env=env)
            case.exe = python
            case.extra["script"] = script
            self.cases[name] = case
        return self.cases[name]


UNIT_TESTS = Path(__file__).resolve().parent / "unit"


def pytest_collection_modifyitems(session, config, items):
    """The lint check and the unit tests (no gdb, no cores: seconds) run first."""
    items.sort(key=lambda item: 0 if UNIT_TESTS in Path(item.path).parents else 1)


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory):
    """Symbol indexes and library copies go to a per-session cache, not the user's."""
    os.environ["COREANALYZE_CACHE_DIR"] = str(tmp_path_factory.mktemp("coreanalyze-cache"))
    yield


@pytest.fixture(scope="session")
def cores(tmp_path_factory) -> CoreCache:
    require("gcc")
    require("gdb")
    return CoreCache(tmp_path_factory.mktemp("cores"))


@pytest.fixture(scope="session")
def python_cores(tmp_path_factory) -> CoreCache:
    """Cores of the Python crashers, written by the kernel: neither a compiler nor gdb needed."""
    return CoreCache(tmp_path_factory.mktemp("python-cores"))


@pytest.fixture
def hide_gdb(monkeypatch):
    """Call it (once the test's cores exist) to take every gdb off PATH for the rest of the
    test: what runs after must not need one."""
    import shutil

    def hide() -> None:
        kept = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and not os.path.exists(os.path.join(d, "gdb"))]
        monkeypatch.setenv("PATH", os.pathsep.join(kept))
        assert shutil.which("gdb") is None

    return hide


@pytest.fixture(scope="session")
def in_ci() -> bool:
    return os.environ.get("CI") == "true"


@pytest.fixture(scope="session")
def tf_cores(tmp_path_factory):
    """Real TensorFlow crash cores (tests/tfcores.py), each built on first use.

    `tf_cores.get("kernel_check_failure")` -> CrashCase. The cores (~300 MB each) live in one
    directory of this session, removed when the session ends.
    """
    from tfcores import TFCoreCache, claim_corpus_dir, release_corpus_dir, require_tensorflow

    python = require_tensorflow()
    require("gdb")
    require("g++")
    root, lock = claim_corpus_dir(tmp_path_factory.getbasetemp())
    try:
        yield TFCoreCache(root, python)
    finally:
        release_corpus_dir(root, lock)


@pytest.fixture(scope="session")
def arm_cores(tmp_path_factory):
    """Real aarch64 cores (tests/armcores.py): a Debian arm64 sysroot and qemu-run crashers,
    each built on first use."""
    from armcores import CROSS_GCC, QEMU, ArmCoreCache

    require(QEMU)
    require(CROSS_GCC)
    require("gdb-multiarch")
    return ArmCoreCache(tmp_path_factory.mktemp("arm-cores"))
