"""Fixtures of the integration tests: real crashers compiled and run once per test session,
cores cached; aarch64 cores built on first use (TensorFlow's: tests/conftest.py)."""

from __future__ import annotations

import functools
import os

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
