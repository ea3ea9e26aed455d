"""Real aarch64 cores made on this x86-64 machine.

A device's sysroot is assembled from Debian's arm64 packages (`apt-get download`, unpacked
with `dpkg -x`, never installed); C crashers are cross-compiled with aarch64-linux-gnu-gcc and
run under qemu-aarch64, which writes the guest's core as `qemu_<prog>_<date>_<pid>.core` when
core dumps are enabled. qemu itself then dies by the same signal, so the kernel may also write
qemu's own (x86-64) core next to it: that one is removed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from support.coregen import CrashCase, raise_core_limit, wait_for_core_file
from support.paths import CRASHERS
from support.require import require

QEMU = "qemu-aarch64-static"
CROSS_GCC = "aarch64-linux-gnu-gcc"
# What a C program of the tests maps: the C library with its loader, and libgcc_s (unwinding
# for pthread_exit / cancellation); then Debian's CPython 3.11 with what `import ctypes` needs.
SYSROOT_PACKAGES = (
    "libc6:arm64", "libgcc-s1:arm64",
    "python3.11-minimal:arm64", "libpython3.11-minimal:arm64", "libpython3.11-stdlib:arm64",
    "libffi8:arm64", "libexpat1:arm64", "zlib1g:arm64",
)  # fmt: skip
SYSROOT_PYTHON = "usr/bin/python3.11"

# name -> (C source, the CPU qemu emulates or None for all features). Most are the x86-64
# crashers' sources: the same crash on the other architecture.
ARM_CRASHERS = {
    "null_thread": ("null_thread.c", None),
    "assert_fail": ("assert_fail.c", None),
    "recursion": ("recursion.c", None),
    "trap": ("ud2.c", None),  # __builtin_trap: `brk #0x3e8` on aarch64
    "dotprod": ("arm_dotprod.c", "cortex-a53"),  # an Armv8.2 instruction on an Armv8.0 CPU
}


def build_sysroot(root: Path, packages: tuple[str, ...] = SYSROOT_PACKAGES) -> Path:
    """Debian's arm64 packages unpacked into root/sysroot (once: kept when already there)."""
    sysroot = root / "sysroot"
    if (sysroot / "lib" / "ld-linux-aarch64.so.1").exists():
        return sysroot
    apt_get, dpkg = require("apt-get"), require("dpkg")
    debs = root / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([apt_get, "download", *packages], cwd=debs, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"apt-get download {' '.join(packages)} failed (is arm64 a dpkg architecture? ./setup.sh adds it): {done.stderr[-2000:]}"
        )
    for deb in sorted(debs.glob("*.deb")):
        subprocess.run([dpkg, "-x", str(deb), str(sysroot)], check=True, capture_output=True)
    return sysroot


def cross_compile(source: Path, out: Path) -> Path:
    cc = require(CROSS_GCC)
    cmd = [cc, "-g", "-O1", "-fno-omit-frame-pointer", "-o", str(out), str(source), "-pthread"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out


def run_under_qemu_to_core(
    name: str, exe: Path, sysroot: Path, workdir: Path, cpu: str | None = None, args: tuple[str, ...] = (), timeout: float = 300.0
) -> CrashCase:
    """Run an aarch64 program under qemu until it dies by a signal; return the guest's core."""
    qemu = require(QEMU)
    workdir.mkdir(parents=True, exist_ok=True)
    argv = [str(exe), *args]
    proc = subprocess.run(
        [qemu, "-L", str(sysroot), *(["-cpu", cpu] if cpu else []), *argv],
        cwd=workdir,
        preexec_fn=raise_core_limit,
        capture_output=True,
        timeout=timeout,
    )
    if proc.returncode >= 0:
        raise RuntimeError(f"{name}: expected death by a signal, got exit {proc.returncode}: {proc.stderr[-2000:]!r}")
    for leftover in workdir.glob("core*"):
        leftover.unlink()  # qemu's own x86-64 core: large and not what the tests analyze
    guest = sorted(workdir.glob(f"qemu_{exe.name}_*.core"), key=os.path.getmtime)
    if not guest:
        raise RuntimeError(f"{name}: qemu wrote no core (stderr: {proc.stderr[-2000:]!r})")
    wait_for_core_file(guest[-1])
    return CrashCase(name, guest[-1], exe, argv, workdir, "qemu")


class ArmCoreCache:
    """The sysroot and each aarch64 crash, built at most once per test session."""

    def __init__(self, root: Path):
        self.root = root
        self.cases: dict[str, CrashCase] = {}
        self._sysroot: Path | None = None

    @property
    def sysroot(self) -> Path:
        if self._sysroot is None:
            self._sysroot = build_sysroot(self.root)
        return self._sysroot

    def c_crash(self, name: str) -> CrashCase:
        if name not in self.cases:
            workdir = self.root / name
            workdir.mkdir(parents=True, exist_ok=True)
            source, cpu = ARM_CRASHERS[name]
            exe = cross_compile(CRASHERS / source, workdir / name)
            self.cases[name] = run_under_qemu_to_core(name, exe, self.sysroot, workdir, cpu)
        return self.cases[name]

    def python_crash(self, name: str, script: Path) -> CrashCase:
        """The sysroot's CPython 3.11 running script (isolated, without site) until it crashes."""
        if name not in self.cases:
            python = self.sysroot / SYSROOT_PYTHON
            case = run_under_qemu_to_core(name, python, self.sysroot, self.root / name, args=("-I", "-S", str(script)))
            case.extra["script"] = script
            self.cases[name] = case
        return self.cases[name]
