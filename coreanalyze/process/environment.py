"""The environment block TensorFlow maintainers ask for in every crash report.

Versions come from the process itself where it can tell (its sys.modules, see imported.py),
then from what it had mapped: the wheel (its RECORD and METADATA) that
installed a mapped library, the git version string in the TensorFlow session wrapper's read-only data,
sonames of CUDA libraries, and the CPU features the kernel put in the core's auxv. Facts about
the machine doing the analysis are labelled as such: they may differ from the crashed one.
"""

from __future__ import annotations

import os
import platform
import re
from typing import Any

from coreanalyze.arch import hwcap_features
from coreanalyze.base.filecache import PerFileCache
from coreanalyze.base.filefacts import optional_str
from coreanalyze.base.model import Report
from coreanalyze.process.imported import normalize
from coreanalyze.process.packages import owner_of, site_packages_of
from coreanalyze.process.process import Process

CUDA_LIBRARY = re.compile(r"^lib(cuda|cudart|cudnn|cublas|cublasLt|cufft|curand|cusolver|cusparse|nccl|nvrtc|nvJitLink)\.so(\.[\d.]+)?$")
GIT_VERSION = re.compile(rb"v\d+\.\d+\.\d+[-\w.]*-g[0-9a-f]{7,40}")


def _packages(report: Report) -> list[dict[str, Any]]:
    """The process's packages (read from its sys.modules, when the walker could) with the
    libraries each installed, from the RECORD files of the wheels here. A version recorded
    here that differs from the process's is kept apart as version_here: it is this machine's."""
    entries: dict[str, dict[str, Any]] = {}
    by_module: dict[str, dict[str, Any]] = {}
    for imported in report.environment.get("packages") or []:
        entry = entries.setdefault(normalize(imported["name"]), {**imported, "libraries": []})
        by_module[imported.get("module") or imported["name"]] = entry
    for module in report.modules:
        path = module.local_path or module.path
        owner = owner_of(path)
        if owner is None:
            continue
        name, version = owner
        entry = entries.get(normalize(name)) or by_module.get(_top_level_name(path))
        if entry is None:
            entry = entries[normalize(name)] = {"name": name, "version": version, "path": None, "libraries": []}
        entry["name"] = name  # the distribution's own spelling, from its METADATA
        if entry.get("version") is None:
            entry["version"] = version
        elif entry["version"] != version:
            entry["version_here"] = version
        entry["libraries"].append(os.path.basename(module.path))
    return sorted(entries.values(), key=lambda e: e["name"].lower())


def _top_level_name(path: str) -> str | None:
    """tensorflow for .../site-packages/tensorflow/python/_pywrap_tf_session.so."""
    site = site_packages_of(path)
    if site is None:
        return None
    return os.path.relpath(path, site).split(os.sep)[0]


def _tensorflow_git_version(report: Report) -> str | None:
    """The git describe string compiled into the session wrapper (tf.version.GIT_VERSION)."""
    for module in report.modules:
        # no-build-id: TensorFlow's wheel libraries carry none; equal headers are the check.
        if os.path.basename(module.path) != "_pywrap_tf_session.so" or not module.status.trusted_image:
            continue
        return _git_versions.get(module.local_path or module.path, _read_git_version)
    return None


# Read once per version of the file, and kept between runs: a search of a 4 MB .rodata.
_git_versions: PerFileCache[str] = PerFileCache("tensorflow-git-versions", decode=optional_str)


def _read_git_version(path: str) -> str | None:
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as f:
            section = ELFFile(f).get_section_by_name(".rodata")
            if section is None or section["sh_size"] > 64 << 20:
                return None
            match = GIT_VERSION.search(section.data())
    except (OSError, ELFError, ValueError):
        return None
    return match.group(0).decode() if match else None


def _cuda_libraries(report: Report) -> list[dict[str, str]]:
    found = []
    for module in report.modules:
        name = os.path.basename(module.path)
        match = CUDA_LIBRARY.match(name)
        if match:
            found.append({"library": name, "version": (match.group(2) or "").lstrip(".") or None, "path": module.path})
    return found


def _cpu_from_auxv(auxv: dict[str, Any], arch: str | None) -> dict[str, Any]:
    cpu: dict[str, Any] = {}
    if "AT_PLATFORM" in auxv:
        cpu["platform"] = auxv["AT_PLATFORM"]
    hwcap, hwcap2 = auxv.get("AT_HWCAP"), auxv.get("AT_HWCAP2")
    if isinstance(hwcap, int):
        cpu["hwcap"] = f"0x{hwcap:x}"
    if isinstance(hwcap2, int):
        cpu["hwcap2"] = f"0x{hwcap2:x}"
    # Feature names per architecture (coreanalyze.arch): the ISA-mismatch advice needs them.
    cpu.update(hwcap_features(arch, hwcap, hwcap2))
    return cpu


def _analysis_machine_cpu() -> dict[str, Any]:
    info: dict[str, Any] = {"machine": platform.machine()}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and "model" not in info:
                    info["model"] = value.strip()
                elif key == "flags" and "flags" not in info:
                    flags = value.split()
                    info["avx_features"] = sorted(f for f in flags if f.startswith(("avx", "fma", "amx")))
                if "model" in info and "avx_features" in info:
                    break
    except OSError:
        pass
    return info


def describe_environment(process: Process, report: Report, *, include_env: bool = False) -> dict[str, Any]:
    env: dict[str, Any] = {}
    packages = _packages(report)
    by_name = {p["name"].lower(): p for p in packages}
    for name, p in by_name.items():
        if name in ("tensorflow", "tensorflow-cpu", "tensorflow_cpu", "tf-nightly", "tf_nightly", "tensorflow-gpu", "intel-tensorflow"):
            env["tensorflow_version"] = p["version"]
            env["tensorflow_package"] = p["name"]
        elif name == "numpy":
            env["numpy_version"] = p["version"]
    git = _tensorflow_git_version(report)
    if git:
        env["tensorflow_git_version"] = git
    if "python_version" not in report.environment:
        for module in report.modules:
            m = re.search(r"(?:libpython|/python)(3\.\d+)", module.path)
            if m:
                env["python_version"] = m.group(1)
                break
    cuda = _cuda_libraries(report)
    if cuda:
        env["cuda_libraries"] = cuda
    if report.core is not None:
        env["cmdline"] = report.core.cmdline
        env["cpu"] = _cpu_from_auxv(report.auxv, report.core.arch)
    env["analysis_machine_cpu"] = _analysis_machine_cpu()
    env["packages"] = packages
    # As the process had it when it died: what it set itself (os.environ[...] = ...) included.
    environ = process.current_environment
    if environ:
        if include_env:
            env["environment_variables"] = dict(environ)
        else:
            env["environment_variable_names"] = sorted(environ)
    return env
