"""--fetch picks the distributions, versions and wheel tags of the dead process from evidence in
its core: the real GPU core of ../shared/data/gpu (Python 3.12 on Ubuntu 24.04's glibc 2.39,
cupy-cuda13x 14.2.0 with NVIDIA's CUDA 13 wheels, numpy, ml_dtypes), read here without a GPU.

Which candidates and which tags are checked without a download; the download path itself uses
the smallest wheel of the core (ml_dtypes, ~0.4 MB) from the public index, never the CUDA ones."""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.publicindex import PUBLIC_INDEX, public_index_reachable, use_public_index

from coreanalyze.corefile import read_core
from coreanalyze.corefile.modules import module_table
from coreanalyze.fetch import fetch_missing
from coreanalyze.fetch.resolve import resolve
from coreanalyze.fetch.target import process_target
from coreanalyze.fetch.verify import mismatch
from coreanalyze.fetch.wheels import abi_tags, platform_tags, wheel_fits
from coreanalyze.process.imported import as_dicts, distributions_in_memory, imported_packages
from coreanalyze.process.packages import site_packages_of
from coreanalyze.process.process import Process
from coreanalyze.python.coretarget import walk_core
from coreanalyze.python.pyruntime import runtime_unless_symbols
from coreanalyze.symbols.provenance import mark_sources

SITE = "/opt/torch/.venv/lib/python3.12/site-packages"


@pytest.fixture(scope="module")
def gpu_process(gpu_crash):
    """(process, modules, packages from sys.modules, dist-infos in memory), read from the core."""
    notes = read_core(gpu_crash.core)
    modules = module_table(notes, sysroot=str(gpu_crash.sysroot))
    process = Process(notes, modules)
    runtime = runtime_unless_symbols(process, modules)
    walk = walk_core(process, modules, {"imports": True, **(runtime.walker_options() if runtime else {})})
    memory = distributions_in_memory(notes.memory)
    packages = as_dicts(imported_packages(walk.get("imports") or [], memory))
    yield process, modules, packages, memory
    notes.close()


def _resolve(gpu_process, member, memory=None):
    _, modules, packages, found = gpu_process
    target = process_target("3.12", "x86_64", modules)
    chosen = found if memory is None else memory
    return [(c.distribution, c.version) for c in resolve(member, packages, chosen, target, [m.path for m in modules], SITE).candidates]


def test_the_process_target_is_read_from_the_core(gpu_process):
    _, modules, _, _ = gpu_process
    target = process_target("3.12", "x86_64", modules)
    assert target.abi == "cp312"  # from the extension modules' names
    assert target.glibc == (2, 39)  # Ubuntu 24.04's libc, read in the sysroot's copy of it
    assert target.accelerators["cuda"][0] == 13  # libnvrtc.so.13, nvidia/cu13/
    tags = platform_tags(target)
    assert "manylinux_2_39_x86_64" in tags and "manylinux2014_x86_64" in tags
    assert not any(t.startswith(("manylinux_2_40", "manylinux_2_41", "musllinux")) for t in tags)
    assert abi_tags(target) == ["cp312", "abi3", "none"]
    # The wheel that was refused before: this machine's Python, not the process's.
    assert not wheel_fits("ml_dtypes-0.6.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl", target)
    assert wheel_fits("ml_dtypes-0.6.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl", target)
    assert not wheel_fits("numpy-2.5.2-cp312-cp312-manylinux_2_40_x86_64.whl", target)  # newer glibc
    assert wheel_fits("nvidia_cuda_nvrtc-13.0.88-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl", target)


def test_packages_resolve_to_the_builds_that_ran(gpu_process):
    # cupy's __version__ is 14.2.0 but its distribution is cupy-cuda13x: the dist-info in memory says so.
    assert _resolve(gpu_process, "cupy/_core/core.cpython-312-x86_64-linux-gnu.so")[0] == ("cupy-cuda13x", "14.2.0")
    # cupy_backends has no __version__ of its own; the same distribution installed it.
    assert _resolve(gpu_process, "cupy_backends/cuda/api/runtime.cpython-312-x86_64-linux-gnu.so")[0] == ("cupy-cuda13x", "14.2.0")
    assert _resolve(gpu_process, "numpy.libs/libscipy_openblas64_-61654e39.so")[0] == ("numpy", "2.5.2")
    assert _resolve(gpu_process, "ml_dtypes/_ml_dtypes_ext.cpython-312-x86_64-linux-gnu.so")[0] == ("ml-dtypes", "0.6.0")


def test_namespace_wheels_are_named_by_the_library(gpu_process):
    nvrtc = _resolve(gpu_process, "nvidia/cu13/lib/libnvrtc.so.13")
    assert nvrtc[0] == ("nvidia-cuda-nvrtc", "13.0.88")  # its dist-info in the process's memory
    assert ("nvidia-cuda-nvrtc-cu13", "13.*") in nvrtc  # bounded by the library's own version
    assert _resolve(gpu_process, "nvidia/cu13/lib/libnvrtc-builtins.so.13.0")[0] == ("nvidia-cuda-nvrtc", "13.0.88")


def test_without_dist_infos_the_loaded_libraries_decide(gpu_process):
    """A process whose memory names no dist-info: the CUDA major of its libraries picks the build."""
    assert _resolve(gpu_process, "cupy/_core/core.cpython-312-x86_64-linux-gnu.so", memory=[]) == [
        ("cupy-cuda13x", "14.2.0"),
        ("cupy", "14.2.0"),
    ]
    assert _resolve(gpu_process, "nvidia/cu13/lib/libnvrtc.so.13", memory=[]) == [
        ("nvidia-cuda-nvrtc-cu13", "13.*"),
        ("nvidia-cuda-nvrtc", "13.*"),
    ]


@pytest.mark.public_index
def test_the_wheel_for_the_dead_python_is_downloaded_and_verified(gpu_process, monkeypatch, tmp_path, in_ci):
    """ml_dtypes of the core from the public index: the cp312 wheel (this machine runs another
    Python), verified by build-id; a version the index lacks says so in the module table's words."""
    if not public_index_reachable("ml-dtypes") and not in_ci:
        pytest.skip(f"{PUBLIC_INDEX} is not reachable (in CI this test must run)")
    use_public_index(monkeypatch)
    process, modules, packages, memory = gpu_process
    wanted = [m for m in modules if "/site-packages/ml_dtypes/" in m.path]
    assert wanted and site_packages_of(wanted[0].path) is not None
    result = fetch_missing(process, wanted, packages, python_version="3.12", arch="x86_64", cache=tmp_path / "cache", distributions=memory)
    assert set(result.files) == {m.path for m in wanted}, result.unfetched
    assert all(mismatch(process, path, file) is None for path, file in result.files.items())
    (attempt,) = result.attempts
    assert "-cp312-" in attempt.wheel and attempt.outcome.startswith("used")

    claimed = [dict(p, version="0.0.0") if p["module"] == "ml_dtypes" else p for p in packages]
    result = fetch_missing(process, wanted, claimed, python_version="3.12", arch="x86_64", cache=tmp_path / "other")
    assert not result.files
    (why,) = result.unfetched.values()
    assert "the index has no ml-dtypes 0.0.0" in why, why
    # The same module table line in the report's words: why it stayed missing.
    missing = [replace(m, local_path=None) for m in wanted]


    mark_sources(missing, python=None, sysroot="/nowhere", unfetched=result.unfetched)
    assert missing[0].not_found.endswith(f"--fetch: {why}")
