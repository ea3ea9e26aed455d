"""Downloading a wheel with pip itself, and taking one file out of it.

`python -m pip download` reads the user's pip configuration (index URL, extra indexes,
find-links, proxy, certificates, cache), so a private index works as it does for installs.
The platform tags are the core's (manylinux of any glibc, or a plain linux wheel), the Python
version the dead interpreter's. One lock file per wheel makes the workers of a batch wait for
one download instead of starting their own.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

PIP_TIMEOUT = 1800  # seconds for one download; a TensorFlow wheel is ~250 MB
MAX_MEMBER_BYTES = 4 << 30
# glibc minor versions a manylinux wheel may name (pip does not widen manylinux_2_X itself).
MANYLINUX_GLIBC = range(5, 45)


class WheelError(Exception):
    """pip could not provide the wheel, or it holds no such file."""


def platform_tags(arch: str) -> list[str]:
    tags = [f"manylinux_2_{minor}_{arch}" for minor in reversed(MANYLINUX_GLIBC)]
    return [*tags, f"manylinux2014_{arch}", f"manylinux2010_{arch}", f"manylinux1_{arch}", f"linux_{arch}"]


def wheel_file_prefix(distribution: str, version: str) -> str:
    """How a wheel's file name starts (PEP 427: "-" and "." of the name become "_")."""
    return f"{re.sub(r'[-_.]+', '_', distribution).lower()}-{version}-"


def download(distribution: str, version: str, python_version: str, arch: str, directory: Path) -> tuple[Path, bool]:
    """The wheel of distribution==version for this Python and platform, downloaded once; and
    whether this call downloaded it (False: it was in the cache already)."""
    directory.mkdir(parents=True, exist_ok=True)
    prefix = wheel_file_prefix(distribution, version)
    with open(directory / f".{prefix}lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _find(directory, prefix)
        if found is not None:
            return found, False
        command = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--implementation", "cp", "--python-version", python_version,
            *[arg for tag in platform_tags(arch) for arg in ("--platform", tag)],
            "--dest", str(directory), "--progress-bar", "off", "--quiet", f"{distribution}=={version}",
        ]  # fmt: skip
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise WheelError(f"pip did not finish: {e}") from None
        found = _find(directory, prefix)
        if run.returncode != 0 or found is None:
            last = (run.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise WheelError(f"pip: {last[:300]}")
        return found, True


def _find(directory: Path, prefix: str) -> Path | None:
    for path in sorted(directory.glob("*.whl")):
        if path.name.lower().startswith(prefix):
            return path
    return None


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
