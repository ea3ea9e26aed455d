"""What a wheel must fit: the dead process's Python, ABI, C library and architecture, and the
accelerator libraries it loaded — all read from the core, never from this machine.

- Python version: the interpreter's, as the walker read it.
- ABI: the extension modules the process loaded name it (`.cpython-313t-x86_64-linux-gnu.so`:
  free-threaded 3.13); else the version's plain `cpXY`.
- C library: glibc's version from the libc the core mapped (its file here, in the sysroot or
  locally when it is the same build), which caps the manylinux level; a musl loader means
  musllinux. Unknown: every level is allowed.
- Accelerators: the CUDA / ROCm majors in the file names of the loaded libraries
  (distributions.toml [accelerators]).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Iterable

from coreanalyze.base import model
from coreanalyze.base.vocabulary import ModuleStatus
from coreanalyze.fetch.rules import fetch_rules

SOABI = re.compile(r"\.cpython-(3)(\d{1,2})(t?)-[a-z0-9_]+-linux-(?:gnu|musl)[a-z]*\.so$")
GLIBC_VERSION = re.compile(rb"GNU C Library [^\n\x00]{0,120}?version (2)\.(\d{1,3})")
MUSL_LOADER = re.compile(r"/ld-musl-[a-z0-9_]+\.so\.1$")
LIBC_NAME = re.compile(r"/libc(?:-2\.\d+)?\.so(?:\.6)?$")
SCAN_CHUNK = 1 << 20
MAX_LIBC_SCAN = 8 << 20


@dataclass(frozen=True)
class ProcessTarget:
    python_version: str  # "3.12"
    arch: str  # "x86_64", "aarch64"
    abi: str = ""  # "cp312", "cp313t"
    glibc: tuple[int, int] | None = None
    musl: bool = False
    accelerators: dict[str, tuple[int, int | None]] = field(default_factory=dict)  # "cuda" -> (13, None)

    @property
    def python_tag(self) -> str:
        return "cp" + self.python_version.replace(".", "")

    @property
    def free_threaded(self) -> bool:
        return self.abi.endswith("t")

    def describe(self) -> str:
        libc = f"glibc {self.glibc[0]}.{self.glibc[1]}" if self.glibc else ("musl" if self.musl else "any glibc")
        return f"Python {self.python_version} ({self.abi or self.python_tag}), {libc}, {self.arch}"


def process_target(python_version: str, arch: str, modules: list[model.Module]) -> ProcessTarget:
    paths = [m.path for m in modules]
    return ProcessTarget(
        python_version=python_version,
        arch=arch,
        abi=abi_of(python_version, paths),
        glibc=_glibc(modules),
        musl=any(MUSL_LOADER.search(p) for p in paths),
        accelerators=accelerator_versions(paths),
    )


def abi_of(python_version: str, paths: Iterable[str]) -> str:
    """The interpreter's ABI tag from its extension modules' names (cp313t for a free-threaded
    3.13), else from its version."""
    plain = "cp" + python_version.replace(".", "")
    for path in paths:
        m = SOABI.search(path)
        if m and "cp" + m.group(1) + m.group(2) == plain:
            return plain + m.group(3)
    return plain


def accelerator_versions(paths: Iterable[str]) -> dict[str, tuple[int, int | None]]:
    """accelerator -> (major, minor or None) of the first loaded library that names one."""
    found: dict[str, tuple[int, int | None]] = {}
    paths = list(paths)
    for accelerator, patterns in fetch_rules().accelerators.items():
        for pattern in patterns:
            for path in paths:
                m = pattern.search(os.path.basename(path)) if pattern.pattern.startswith("^") else pattern.search(path)
                if m:
                    minor = int(m.group(2)) if m.re.groups >= 2 and m.group(2) else None
                    found[accelerator] = (int(m.group(1)), minor)
                    break
            if accelerator in found:
                break
    return found


def _glibc(modules: list[model.Module]) -> tuple[int, int] | None:
    """glibc's version from the core's own libc, read in its file here (only a file that is
    that build: status ok)."""
    for module in modules:
        if not LIBC_NAME.search(module.path) or module.local_path is None or module.status != ModuleStatus.OK:
            continue
        version = glibc_version_of(module.local_path)
        if version is not None:
            return version
    return None


def glibc_version_of(path: str) -> tuple[int, int] | None:
    """The version in libc's banner (`GNU C Library ... release version 2.39`)."""
    try:
        with open(path, "rb") as f:
            tail = b""
            for _ in range(MAX_LIBC_SCAN // SCAN_CHUNK):
                chunk = f.read(SCAN_CHUNK)
                if not chunk:
                    break
                m = GLIBC_VERSION.search(tail + chunk)
                if m:
                    return int(m.group(1)), int(m.group(2))
                tail = chunk[-256:]
    except OSError:
        return None
    return None
