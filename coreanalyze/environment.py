"""The environment block TensorFlow maintainers ask for in every crash report.

Versions come from what the process had mapped: the wheel metadata (`*.dist-info`) beside a
mapped library, the git version string in the TensorFlow session wrapper's read-only data,
sonames of CUDA libraries, and the CPU features the kernel put in the core's auxv. Facts about
the machine doing the analysis are labelled as such: they may differ from the crashed one.
"""

from __future__ import annotations

import os
import platform
import re
import threading
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from coreanalyze.model import Report

# x86_64 AT_HWCAP2 bits (arch/x86/include/uapi/asm/hwcap2.h).
X86_HWCAP2 = {0: "ring3mwait", 1: "fsgsbase"}
# The AT_HWCAP on x86_64 is CPUID(1).EDX: a few bits people ask about.
X86_HWCAP_EDX = {23: "mmx", 25: "sse", 26: "sse2", 28: "ht"}

CUDA_LIBRARY = re.compile(r"^lib(cuda|cudart|cudnn|cublas|cublasLt|cufft|curand|cusolver|cusparse|nccl|nvrtc|nvJitLink)\.so(\.[\d.]+)?$")
GIT_VERSION = re.compile(rb"v\d+\.\d+\.\d+[-\w.]*-g[0-9a-f]{7,40}")
MAX_METADATA_BYTES = 1 << 20


def _site_packages_of(path: str) -> Path | None:
    parts = Path(path).parts
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in ("site-packages", "dist-packages"):
            return Path(*parts[: i + 1])
    return None


@dataclass(frozen=True)
class _Distribution:
    path: Path  # the *.dist-info directory
    name: str  # its name part, lower case
    top_levels: tuple[str, ...]  # its top_level.txt, lower case


# Per site-packages directory (and its mtime, which moves when a distribution comes or goes):
# its distributions in name order. A batch sees the same few directories in every core.
_site_index: dict[tuple[str, int], list[_Distribution]] = {}
_metadata_cache: dict[tuple[str, int, int], dict[str, str] | None] = {}
_cache_lock = threading.Lock()
MAX_CACHED_SITES = 64


def _distributions(site: Path) -> list[_Distribution] | None:
    try:
        key = (str(site), os.stat(site).st_mtime_ns)
    except (OSError, ValueError):
        key = None
    if key is not None:
        with _cache_lock:
            if key in _site_index:
                return _site_index[key]
    try:
        candidates = sorted(site.glob("*.dist-info"))
    except OSError:
        return None
    found = []
    for dist in candidates:
        top_file = dist / "top_level.txt"
        tops: list[str] = []
        try:
            if top_file.is_file():
                tops = top_file.read_text(errors="replace").split()
        except OSError:
            pass
        found.append(_Distribution(dist, dist.name.rsplit("-", 1)[0].lower(), tuple(t.lower() for t in tops)))
    if key is not None:
        with _cache_lock:
            if len(_site_index) >= MAX_CACHED_SITES:
                _site_index.clear()
            _site_index[key] = found
    return found


def _metadata(meta: Path) -> dict[str, str] | None:
    """Name and Version of a METADATA file (None when unreadable or either is missing)."""
    try:
        st = os.stat(meta)
        key: tuple[str, int, int] | None = (str(meta), st.st_mtime_ns, st.st_size)
    except (OSError, ValueError):
        key = None
    if key is not None:
        with _cache_lock:
            if key in _metadata_cache:
                return _metadata_cache[key]
    try:
        with open(meta, encoding="utf-8", errors="replace") as f:
            headers = HeaderParser().parsestr(f.read(MAX_METADATA_BYTES), headersonly=True)
    except OSError:
        return None
    info = {"name": headers["Name"], "version": headers["Version"]} if headers.get("Name") and headers.get("Version") else None
    if key is not None:
        with _cache_lock:
            _metadata_cache[key] = info
    return info


def _dist_info(site: Path, top_level: str) -> dict[str, str] | None:
    """Name/version of the distribution that installed `top_level` in `site`."""
    distributions = _distributions(site)
    if distributions is None:
        return None
    key = top_level.replace("-", "_").lower()
    for dist in distributions:
        if key in dist.top_levels or dist.name == key or dist.name.startswith(key + "_"):
            info = _metadata(dist.path / "METADATA")
            if info is not None:
                return dict(info)
    return None


def _top_level_of(path: str, site: Path) -> str | None:
    try:
        rel = Path(path).relative_to(site)
    except ValueError:
        return None
    first = rel.parts[0] if rel.parts else None
    if first is None:
        return None
    if first.endswith(".libs"):  # auditwheel's vendored libraries: numpy.libs -> numpy
        return first[: -len(".libs")]
    if first.endswith(".so"):
        return first.split(".", 1)[0]
    return first


def _packages(report: Report) -> list[dict[str, Any]]:
    """Which installed distributions own the mapped libraries."""
    owners: dict[tuple[str, str], dict[str, Any]] = {}
    known: dict[tuple[Path, str], dict[str, str] | None] = {}
    for module in report.modules:
        local = module.local_path or module.path
        site = _site_packages_of(local)
        if site is None:
            continue
        top = _top_level_of(local, site)
        if not top:
            continue
        if (site, top) not in known:
            known[(site, top)] = _dist_info(site, top)
        info = known[(site, top)]
        if info is None:
            continue
        entry = owners.setdefault((info["name"], info["version"]), {**info, "libraries": []})
        entry["libraries"].append(os.path.basename(module.path))
    return sorted(owners.values(), key=lambda e: e["name"].lower())


def _tensorflow_git_version(report: Report) -> str | None:
    """The git describe string compiled into the session wrapper (tf.version.GIT_VERSION)."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    for module in report.modules:
        if os.path.basename(module.path) != "_pywrap_tf_session.so" or module.status != "ok":
            continue
        try:
            with open(module.local_path or module.path, "rb") as f:
                section = ELFFile(f).get_section_by_name(".rodata")
                if section is None or section["sh_size"] > 64 << 20:
                    return None
                match = GIT_VERSION.search(section.data())
        except (OSError, ELFError, ValueError):
            return None
        return match.group(0).decode() if match else None
    return None


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
        if arch == "x86_64":
            cpu["hwcap_features"] = [n for bit, n in X86_HWCAP_EDX.items() if hwcap >> bit & 1]
    if isinstance(hwcap2, int):
        cpu["hwcap2"] = f"0x{hwcap2:x}"
        if arch == "x86_64":
            cpu["hwcap2_features"] = [n for bit, n in X86_HWCAP2.items() if hwcap2 >> bit & 1]
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


def describe_environment(notes, report: Report, *, include_env: bool = False) -> dict[str, Any]:
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
    environ = getattr(notes, "environ", None)
    if environ:
        if include_env:
            env["environment_variables"] = dict(environ)
        else:
            env["environment_variable_names"] = sorted(environ)
    return env
