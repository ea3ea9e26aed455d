"""Real aarch64 cores made on this x86-64 machine.

A device's sysroot is assembled from Debian's arm64 packages (`apt-get download`, unpacked
with `dpkg -x`, never installed); C crashers are cross-compiled with aarch64-linux-gnu-gcc and
run under qemu-aarch64, which writes the guest's core as `qemu_<prog>_<date>_<pid>.core` when
core dumps are enabled. qemu itself then dies by the same signal, so the kernel may also write
qemu's own (x86-64) core next to it: that one is removed.

A LiteRT (TFLite) interpreter runs from aarch64 wheels of the package index (`pip download
--platform manylinux..._aarch64`, unpacked where pip installs on the device). Invoke has no
natural crash: qemu waits for gdb-multiarch on its gdbstub (`qemu-aarch64 -g PORT`), which
stops the process in the kernel's Eval, corrupts its node argument and detaches, and the
process faults by itself (as tfcores.py does on x86-64).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

from support.coregen import CrashCase, raise_core_limit, wait_for_core_file
from support.paths import CRASHERS, TF_CORPUS
from support.require import require
from support.tfcores import SCENARIOS, FaultInjection, quiet_env, require_tensorflow

QEMU = "qemu-aarch64-static"
CROSS_GCC = "aarch64-linux-gnu-gcc"
# What a C program of the tests maps: the C library with its loader, and libgcc_s (unwinding
# for pthread_exit / cancellation); then Debian's CPython 3.11 with what `import ctypes` needs.
SYSROOT_PACKAGES = (
    "libc6:arm64", "libgcc-s1:arm64",
    "python3.11-minimal:arm64", "libpython3.11-minimal:arm64", "libpython3.11-stdlib:arm64",
    "libffi8:arm64", "libexpat1:arm64", "zlib1g:arm64",
    "libstdc++6:arm64",  # LiteRT's libraries are C++
    "libc6-dbg:arm64",  # the C library's debug info (/usr/lib/debug/.build-id): names and lines inside it
)  # fmt: skip
SYSROOT_PYTHON = "usr/bin/python3.11"
# Where `pip install` puts packages on a Debian device; its path in the cores is the device's.
SITE_PACKAGES = "/usr/local/lib/python3.11/dist-packages"
# aarch64 wheels for CPython 3.11 whose glibc need the sysroot's (Debian 12: 2.36) meets.
ARM_WHEELS = ("ai-edge-litert", "numpy")
WHEEL_PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_17_aarch64", "manylinux_2_28_aarch64")
# The x86-64 TFLite scenario's injection point; on aarch64 the node (second argument) is in x1.
LITERT_INJECTION = replace(SCENARIOS["interpreter_invoke"].injection, module=r"libpywrap_litert_common\.so", register="x1")

# name -> (C source, the CPU qemu emulates or None for all features). Most are the x86-64
# crashers' sources: the same crash on the other architecture.
ARM_CRASHERS = {
    "null_thread": ("null_thread.c", None),
    "assert_fail": ("assert_fail.c", None),
    "recursion": ("recursion.c", None),
    "trap": ("ud2.c", None),  # __builtin_trap: `brk #0x3e8` on aarch64
    "dotprod": ("arm_dotprod.c", "cortex-a53"),  # an Armv8.2 instruction on an Armv8.0 CPU
    # A crash reporter's handler re-raises a wild write. An Armv8.0 CPU: with SVE and SME
    # records in the signal frame (qemu's "max" CPU) gdb 13 never finishes unwinding through it.
    "reraise_handler": ("reraise_handler.c", "cortex-a72"),
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


def download_wheels(directory: Path, requirements: tuple[str, ...] = ARM_WHEELS) -> list[Path]:
    """aarch64 CPython 3.11 wheels from the package index (pip's configuration and cache)."""
    directory.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--implementation", "cp", "--python-version", "3.11",
        *[arg for tag in WHEEL_PLATFORMS for arg in ("--platform", tag)],
        "--dest", str(directory), "--progress-bar", "off", *requirements,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"pip download of aarch64 wheels failed: {done.stderr[-2000:]}")
    return sorted(directory.glob("*.whl"))


def install_wheels(wheels: list[Path], site: Path) -> None:
    """What `pip install` would put into site-packages (a wheel's files, at their places)."""
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def inject_through_gdbstub(injection: FaultInjection, exe: Path, sysroot: Path, port: int, workdir: Path, timeout: float) -> str:
    """gdb-multiarch on qemu's gdbstub: stop at injection.function, corrupt the register, detach."""
    gdb = require("gdb-multiarch")
    env = dict(os.environ)
    env.pop("PYTHONHOME", None)  # gdb's embedded Python must not pick up another interpreter's home
    commands = [
        "set pagination off", "set confirm off", "set breakpoint pending on",
        f"set sysroot {sysroot}", f"file {exe}", f"target remote :{port}",
        f"break {injection.function}", "continue",
        f"set ${injection.register} = {injection.value:#x}", "detach",
    ]  # fmt: skip
    cmd = [gdb, "-nx", "-batch", "-iex", "set auto-load off", "-iex", "set debuginfod enabled off"]
    cmd += [arg for command in commands for arg in ("-ex", command)]
    done = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    log = done.stdout + done.stderr
    (workdir / "inject_fault.log").write_text(log)
    return log


def run_under_qemu_to_core(
    name: str,
    exe: Path,
    sysroot: Path,
    workdir: Path,
    cpu: str | None = None,
    args: tuple[str, ...] = (),
    timeout: float = 300.0,
    injection: FaultInjection | None = None,
) -> CrashCase:
    """Run an aarch64 program under qemu until it dies by a signal; return the guest's core.
    With an injection, qemu waits for gdb-multiarch, which makes the program fault."""
    qemu = require(QEMU)
    workdir.mkdir(parents=True, exist_ok=True)
    argv = [str(exe), *args]
    port = _free_port() if injection else None
    command = [qemu, "-L", str(sysroot), *(["-cpu", cpu] if cpu else []), *(["-g", str(port)] if port else []), *argv]
    proc = subprocess.Popen(
        command,
        cwd=workdir,
        preexec_fn=raise_core_limit,
        env=dict(os.environ, **quiet_env()),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    try:
        log = inject_through_gdbstub(injection, exe, sysroot, port, workdir, timeout) if injection else ""
        _, stderr = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    if injection and not ("hit Breakpoint 1" in log and "detached" in log):
        raise RuntimeError(f"{name}: the fault injection did not happen:\n{log[-4000:]}")
    if proc.returncode >= 0:
        raise RuntimeError(f"{name}: expected death by a signal, got exit {proc.returncode}: {stderr[-2000:]!r}")
    for leftover in workdir.glob("core*"):
        leftover.unlink()  # qemu's own x86-64 core: large and not what the tests analyze
    guest = sorted(workdir.glob(f"qemu_{exe.name}_*.core"), key=os.path.getmtime)
    if not guest:
        raise RuntimeError(f"{name}: qemu wrote no core (stderr: {stderr[-2000:]!r})")
    wait_for_core_file(guest[-1])
    return CrashCase(name, guest[-1], exe, argv, workdir, "qemu", extra={"injection": injection} if injection else {})


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

    @property
    def wheels(self) -> Path:
        """The aarch64 wheels the device's site-packages were installed from (a --find-links dir)."""
        return self.root / "wheels"

    def litert_crash(self) -> CrashCase:
        """LiteRT's interpreter in the sysroot's CPython, its node corrupted in Invoke."""
        name = "litert_invoke"
        if name not in self.cases:
            workdir = self.root / name
            workdir.mkdir(parents=True, exist_ok=True)
            install_wheels(download_wheels(self.wheels), self.sysroot / SITE_PACKAGES.lstrip("/"))
            model = workdir / "dense.tflite"  # written by TensorFlow's converter on this machine
            subprocess.run(
                [str(require_tensorflow()), str(TF_CORPUS / "dense_model.py"), str(model)],
                check=True,
                capture_output=True,
                env=dict(os.environ, **quiet_env()),
            )
            python, script = self.sysroot / SYSROOT_PYTHON, CRASHERS / "litert_invoke.py"
            case = run_under_qemu_to_core(
                name,
                python,
                self.sysroot,
                workdir,
                args=("-I", "-S", str(script), str(model), SITE_PACKAGES),
                timeout=900,
                injection=LITERT_INJECTION,
            )
            case.extra.update(script=script, model=model)
            self.cases[name] = case
        return self.cases[name]
