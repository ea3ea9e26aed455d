"""Downloading a wheel with pip itself, and taking one file out of it.

`python -m pip download` reads the user's pip configuration (index URL, extra indexes,
find-links, proxy, certificates, cache), so a private index works as it does for installs.
The wheel is chosen for the dead process, never for this machine (target.py): its Python
version and ABI (free-threaded included), manylinux up to its glibc or musllinux, its
architecture. One lock file per wheel makes the workers of a batch wait for one download
instead of starting their own. When pip gives nothing, the index is asked why: no such
distribution, no such version, no wheel for that Python, or the network refused.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from coreanalyze.base.buildlock import one_builder
from coreanalyze.fetch.target import ProcessTarget

PIP_TIMEOUT = 1800  # seconds for one download; a TensorFlow wheel is ~250 MB
INDEX_TIMEOUT = 120
MAX_MEMBER_BYTES = 4 << 30
# glibc minor versions a manylinux wheel may name (pip does not widen manylinux_2_X itself).
MANYLINUX_GLIBC = range(5, 45)
MUSLLINUX = range(0, 4)
# Older manylinux names and the glibc they stand for.
LEGACY_MANYLINUX = (("manylinux2014", 17), ("manylinux2010", 12), ("manylinux1", 5))
# What pip and the index say when the network, not the index, refused (proxy, firewall, DNS, TLS).
NETWORK_REFUSALS = re.compile(
    r"NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution|"
    r"Name or service not known|Network is unreachable|ProxyError|SSLError|CERTIFICATE_VERIFY_FAILED|"
    r"Max retries exceeded|ConnectTimeout|ReadTimeout|Connection refused|Connection reset|"
    r"HTTP error 40[37]|40[37] Client Error|Could not fetch URL",
    re.IGNORECASE,
)
# The words worth showing of such a refusal.
NETWORK_DETAIL = re.compile(
    r"Failed to establish a new connection: [^'\")\n]{0,120}|Temporary failure in name resolution|Name or service not known|"
    r"Network is unreachable|HTTP error \d{3}[^\n]{0,120}|\d{3} Client Error[^\n]{0,120}|ProxyError[^\n]{0,120}|"
    r"SSLError[^\n]{0,120}|CERTIFICATE_VERIFY_FAILED|(?:Read|Connect)Timeout[^\n]{0,80}|Connection (?:refused|reset)",
    re.IGNORECASE,
)
NO_MATCH = re.compile(r"No matching distribution found|Could not find a version that satisfies", re.IGNORECASE)


class WheelError(Exception):
    """pip could not provide the wheel, or it holds no such file. `kind` says why, for the
    module table: no-distribution | no-version | no-wheel | network | failed."""

    def __init__(self, message: str, kind: str = "failed") -> None:
        super().__init__(message)
        self.kind = kind


def platform_tags(target: ProcessTarget | str) -> list[str]:
    """The platform tags of wheels the dead process could load, newest first: manylinux up to
    its glibc (any, when unknown), musllinux for a musl process, and plain linux (a private
    index's own builds)."""
    if isinstance(target, str):  # an architecture alone: every glibc
        target = ProcessTarget(python_version="", arch=target)
    arch = target.arch
    if target.musl:
        return [f"musllinux_1_{minor}_{arch}" for minor in reversed(MUSLLINUX)] + [f"linux_{arch}"]
    top = target.glibc[1] if target.glibc and target.glibc[0] == 2 else MANYLINUX_GLIBC[-1]
    tags = [f"manylinux_2_{minor}_{arch}" for minor in reversed(MANYLINUX_GLIBC) if minor <= top]
    tags += [f"{name}_{arch}" for name, minor in LEGACY_MANYLINUX if minor <= top]
    return [*tags, f"linux_{arch}"]


def abi_tags(target: ProcessTarget) -> list[str]:
    """ABIs the interpreter loads: its own, the stable ABI (not in a free-threaded build), none."""
    own = target.abi or target.python_tag
    return [own, "none"] if target.free_threaded else [own, "abi3", "none"]


def wheel_fits(filename: str, target: ProcessTarget) -> bool:
    """Whether a wheel file name's tags (PEP 427/425) fit the process."""
    parts = filename.removesuffix(".whl").split("-")
    if len(parts) < 5:
        return False
    python_tags, abis, platforms = (set(p.split(".")) for p in parts[-3:])
    minor = int(target.python_version.split(".")[1]) if target.python_version.count(".") else None
    stable = {f"cp3{m}" for m in range(2, minor + 1)} if minor is not None else set()
    python_ok = bool(python_tags & {target.python_tag, "py3", f"py3{minor}", "py2.py3"}) or (
        "abi3" in abis and bool(python_tags & stable)
    )
    return python_ok and bool(abis & set(abi_tags(target))) and bool(platforms & {*platform_tags(target), "any"})


def wheel_file_prefix(distribution: str, version: str) -> str:
    """How a wheel's file name starts (PEP 427: "-" and "." of the name become "_"); for a
    version prefix ("13.*"), how the names of the versions it allows start."""
    name = re.sub(r"[-_.]+", "_", distribution).lower()
    return f"{name}-{version[:-1]}" if version.endswith("*") else f"{name}-{version}-"


def download(distribution: str, version: str, target: ProcessTarget, directory: Path) -> tuple[Path, bool]:
    """The wheel of distribution==version that fits the process, downloaded once; and whether
    this call downloaded it (False: it was in the cache already)."""
    directory.mkdir(parents=True, exist_ok=True)
    prefix = wheel_file_prefix(distribution, version)
    # One download of a wheel at a time; a holder stuck past its own download's limit is waited
    # for no longer (the wheel is then fetched again rather than the analysis hanging).
    with one_builder(directory / prefix.replace("*", "x"), wait=PIP_TIMEOUT + 60):
        found = _find(directory, prefix, target)
        if found is not None:
            return found, False
        before = set(directory.glob("*.whl"))
        run = _pip(
            "download", "--no-deps", "--only-binary=:all:", *_target_options(target),
            "--dest", str(directory), "--progress-bar", "off", f"{distribution}=={version}",
            timeout=PIP_TIMEOUT,
        )  # fmt: skip
        new = [p for p in set(directory.glob("*.whl")) - before if wheel_fits(p.name, target)]
        found = _find(directory, prefix, target) if not new else sorted(new)[-1]
        if run.returncode != 0 or found is None:
            raise _why_not(distribution, version, target, run.stderr)
        return found, True


def _target_options(target: ProcessTarget) -> list[str]:
    options = ["--implementation", "cp", "--python-version", target.python_version]
    options += [arg for abi in abi_tags(target) for arg in ("--abi", abi)]
    return options + [arg for tag in platform_tags(target) for arg in ("--platform", tag)]


def _pip(*args: str, timeout: float) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pip", *args]
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise WheelError(f"pip did not finish: {e}") from None


def _last_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    return ((errors or lines or ["no wheel"])[-1])[:300]


def _why_not(distribution: str, version: str, target: ProcessTarget, stderr: str) -> WheelError:
    """Why pip gave no wheel, in the words the module table uses."""
    if NETWORK_REFUSALS.search(stderr):
        return _refused(stderr)
    if not NO_MATCH.search(stderr):
        return WheelError(f"pip: {_last_line(stderr)}")
    # The index itself says whether the project or the version exists (its versions for any
    # Python and platform), so a wheel missing only for this Python is told apart.
    try:
        index = _pip("index", "versions", "--pre", distribution, timeout=INDEX_TIMEOUT)
    except WheelError:
        index = None
    if index is not None and NETWORK_REFUSALS.search(index.stderr):
        return _refused(index.stderr)
    if index is not None and index.returncode != 0 and NO_MATCH.search(index.stderr):
        return WheelError(f"no such distribution on the index: {distribution}", "no-distribution")
    versions = _listed_versions(index.stdout) if index is not None and index.returncode == 0 else None
    if versions is not None and not any(_allows(version, v) for v in versions):
        return WheelError(f"the index has no {distribution} {version}", "no-version")
    return WheelError(f"no wheel of {distribution} {version} for {target.describe()}", "no-wheel")


def _refused(stderr: str) -> WheelError:
    detail = NETWORK_DETAIL.search(stderr)
    return WheelError(f"download refused by the network: {detail.group(0).strip() if detail else _last_line(stderr)}", "network")


def _listed_versions(stdout: str) -> list[str] | None:
    m = re.search(r"Available versions:\s*(.+)", stdout)
    return [v.strip() for v in m.group(1).split(",")] if m else None


def _allows(spec: str, version: str) -> bool:
    return version.startswith(spec[:-1]) if spec.endswith("*") else version == spec


def _find(directory: Path, prefix: str, target: ProcessTarget) -> Path | None:
    """A cached wheel of that name and version that fits the process (a wheel kept for another
    Python or platform is never taken)."""
    found = [p for p in directory.glob("*.whl") if p.name.lower().startswith(prefix) and wheel_fits(p.name, target)]
    return sorted(found)[-1] if found else None


def extract(wheel: Path, member: str, destination: Path) -> None:
    """Copy one file of the wheel (its path relative to site-packages) to destination."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            info = archive.getinfo(member)
            if info.file_size > MAX_MEMBER_BYTES:
                raise WheelError(f"{member} is larger than {MAX_MEMBER_BYTES >> 30} GiB")
            destination.parent.mkdir(parents=True, exist_ok=True)
            partial = destination.with_name(destination.name + f".{os.getpid()}.partial")
            with archive.open(info) as source, open(partial, "wb") as target:
                shutil.copyfileobj(source, target, 1 << 20)
            os.replace(partial, destination)
    except KeyError:
        raise WheelError(f"{wheel.name} has no {member}") from None
    except (OSError, zipfile.BadZipFile) as e:
        raise WheelError(f"{wheel.name}: {e}") from None
