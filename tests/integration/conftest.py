"""Fixtures of the integration tests: real crashers compiled and run once per test session,
cores cached; aarch64 cores built on first use (TensorFlow's: tests/conftest.py)."""

from __future__ import annotations

import functools
import inspect
import os
import re

import pytest
from support.corecache import CoreCache
from support.require import require


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
def arm_cores(tmp_path_factory):
    """Real aarch64 cores (tests/armcores.py): a Debian arm64 sysroot and qemu-run crashers,
    each built on first use."""
    from support.armcores import CROSS_GCC, QEMU, ArmCoreCache

    require(QEMU)
    require(CROSS_GCC)
    require("gdb-multiarch")
    return ArmCoreCache(tmp_path_factory.mktemp("arm-cores"))


@pytest.fixture(scope="session")
def gpu_crash(tmp_path_factory):
    """The real H100 GPU fault of ../shared/data/gpu, unpacked once (support/gpudata.py)."""
    from support.gpudata import unpack_gpu_crash

    return unpack_gpu_crash(tmp_path_factory.mktemp("gpu-crash"))


@pytest.fixture(scope="session")
def gpu_device_cores(tmp_path_factory, gpu_crash):
    """`gpu_device_cores("hang_spin")` -> the decompressed core of tests/data/gpu (a GPU hang,
    the same hang re-raised by faulthandler, a bad cudaMemcpy), each unpacked on first use.
    They are analyzed with gpu_crash.sysroot (same machine, same driver)."""
    import functools

    from support.gpudata import unpack_device_core

    workdir = tmp_path_factory.mktemp("gpu-device-cores")
    return functools.cache(lambda name: unpack_device_core(name, workdir))


@pytest.fixture(scope="session")
def job_cores(tmp_path_factory):
    """Real multi-process jobs (support/jobcores.py), each run on first use: `job_cores.get(
    "torch_one_crash")` -> JobRun with a kernel-written core for every rank and the job's output.
    The cores live in one directory of this session, removed when the session ends."""
    from support.jobcores import job_core_cache

    with job_core_cache(tmp_path_factory.getbasetemp()) as cache:
        yield cache


@pytest.fixture(scope="session")
def pasted_backtraces():
    """`pasted_backtraces(exe, core)` -> what `gdb -batch -ex bt` prints on the core, run once per
    core and session: every test that triages a core's paste reads the same text."""
    from support.pastes import gdb_backtrace_text

    return functools.cache(gdb_backtrace_text)


def _tf_scenarios_in_order(items) -> tuple[list[str], bool]:
    """The TensorFlow scenarios the selected tests use, in the order they first need them (from
    their parameters and the names in their code), and whether any reads the plain analysis."""
    from support.tfcores import SCENARIOS

    names: list[str] = []
    analyzed = False
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if not fixtures & {"tf_cores", "tf_reports"}:
            continue
        analyzed = analyzed or "tf_reports" in fixtures
        params = getattr(getattr(item, "callspec", None), "params", {})
        found = [v for v in params.values() if isinstance(v, str) and v in SCENARIOS]
        try:
            source = inspect.getsource(item.function)
        except (AttributeError, OSError, TypeError):
            source = ""
        found += [word for word in re.findall(r"[\"'](\w+)[\"']", source) if word in SCENARIOS]
        names += [name for name in found if name not in names]
    return names, analyzed


@pytest.fixture(scope="session", autouse=True)
def tf_cores_made_ahead(request):
    """From the first integration test on (the unit tests run alone in a process of one thread,
    as some of them check): when the selected tests use TensorFlow's cores, a thread builds them (and analyzes them,
    when tests read the analysis) from the session's start on, in the order the tests first need
    them, while the tests before them run: on two CPUs the cores cost the session little of its
    time. Without TensorFlow, gdb or g++ nothing is made ahead (the tests that need the cores
    say what is missing)."""
    import shutil

    from support.tfcores import find_tf_python

    names, analyzed = _tf_scenarios_in_order(request.session.items)
    if names and find_tf_python().has_tensorflow and shutil.which("gdb") and shutil.which("g++"):
        cache = request.getfixturevalue("tf_cores")
        cache.prepare_in_background(names, analyze=analyzed)
    # The older TensorFlow's environment: ~600 MB unpacked from pip's cache, mostly the disk's work.
    if find_tf_python().has_tensorflow and any("older_python" in getattr(i, "fixturenames", ()) for i in request.session.items):
        request.getfixturevalue("older_tensorflow").start()
    yield
