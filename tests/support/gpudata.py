"""The real GPU crash of ../shared/data/gpu (an NVIDIA H100; its README says how it was made),
unpacked once per test session into a temporary directory: the CPU core, the GPU core dump the
driver wrote, the machine's OS files as a sysroot, and the texts users saw.

The files stay outside the repository (the driver's files are NVIDIA's); a missing copy is a
skip on a workstation and a failure in CI, like any other missing dependency.
"""

from __future__ import annotations

import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from support.paths import GPU_DATA
from support.require import missing, require

CORE = "core.cupy_illegal_address.zst"
GPU_CORE = "gpu.cupy_illegal_address.nvcudmp.zst"
SYSROOT = "sysroot.ubuntu2404-driver580.tar.zst"


@dataclass(frozen=True)
class GpuCrash:
    core: Path  # the CPU core (SIGABRT from a CUDA driver thread), decompressed
    gpu_core: Path  # the driver's GPU core dump (.nvcudmp), decompressed
    sysroot: Path  # the machine's files: interpreter, Ubuntu's libraries, the driver's libcuda
    texts: Path  # the folder of the texts (stderr, compute-sanitizer, cuda-gdb, Python traceback)
    script: Path  # the program that crashed


def _decompress(source: Path, target: Path) -> Path:
    zstandard = require(module="zstandard")
    with open(source, "rb") as src, open(target, "wb") as dst:
        zstandard.ZstdDecompressor().copy_stream(src, dst)
    return target


def _unpack_sysroot(source: Path, target: Path) -> Path:
    zstandard = require(module="zstandard")
    target.mkdir()
    with open(source, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as stream:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                # Links and files only, inside the target (the archive is test data, still untrusted).
                if member.name.startswith("/") or ".." in Path(member.name).parts:
                    continue
                if member.isdev():
                    continue
                if hasattr(tarfile, "data_filter"):
                    tar.extract(member, target, set_attrs=False, filter="data")
                else:
                    tar.extract(member, target, set_attrs=False)
    inner = target / "sysroot"
    return inner if inner.is_dir() else target


def unpack_gpu_crash(workdir: Path) -> GpuCrash:
    if not all((GPU_DATA / name).is_file() for name in (CORE, GPU_CORE, SYSROOT)):
        missing(f"the real GPU crash data in {GPU_DATA} (set COREANALYZE_SHARED_DATA to its parent folder)")
    workdir.mkdir(parents=True, exist_ok=True)
    core = _decompress(GPU_DATA / CORE, workdir / "core.464")
    gpu_core = _decompress(GPU_DATA / GPU_CORE, workdir / "gpu.464.nvcudmp")
    sysroot = _unpack_sysroot(GPU_DATA / SYSROOT, workdir / "sysroot")
    script = workdir / "cupy_illegal_address.py"
    shutil.copyfile(GPU_DATA / "cupy_illegal_address.py", script)
    return GpuCrash(core=core, gpu_core=gpu_core, sysroot=sysroot, texts=GPU_DATA, script=script)


# Cores of GPU processes kept in the repository (tests/data/gpu; its README says how they were
# made and trimmed): they name the same driver and interpreter as the shared sysroot.
DEVICE_CORES = ("hang_spin", "hang_fh", "memcpy_segv")


def unpack_device_core(name: str, workdir: Path) -> Path:
    from support.paths import DATA

    workdir.mkdir(parents=True, exist_ok=True)
    target = workdir / f"{name}.core"
    if not target.exists():
        _decompress(DATA / "gpu" / f"{name}.core.zst", target)
    return target


def core_alone(crash: GpuCrash, directory: Path) -> Path:
    """The CPU core in a directory of its own, without the GPU core the driver wrote beside it
    (which, found there, makes the verdict the GPU core's)."""
    directory.mkdir(parents=True, exist_ok=True)
    link = directory / crash.core.name
    if not link.exists():
        link.symlink_to(crash.core)
    return link
