"""CPython 3.14 and 3.15 (and Debian's 3.13 beside them) from a Debian unstable root.

./setup.sh makes the root (debootstrap, kept outside the repository) with the interpreters,
their -dbg and -dev packages, gdb, and TensorFlow's first cp314 wheels in /opt/tensorflow-py314.
Crashers run there with chroot, as root; the kernel writes their cores in the directory they
run in, and the tests analyze them from outside with `--sysroot ROOT`, as a user analyzes the
core of another machine.

A crash's directory has the same absolute path on both sides of the chroot: a real directory
inside the root, and on this machine a link at the same path into the root. So the script's
path the core holds is a path the tests can read (marker lines), and the core lies where the
kernel wrote it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

from support.coregen import CrashCase, kernel_writes_cores_here, run_to_core
from support.require import missing

SID_ROOT = Path(os.environ.get("COREANALYZE_SID_ROOT", "/var/cache/coreanalyze/sid-root"))
NEWER = ("3.14", "3.15")  # the versions only the root has
TENSORFLOW_PY314 = Path("/opt/tensorflow-py314/bin/python")  # inside the root
CRASH_BASE = Path("/tmp/coreanalyze-sid")  # on both sides


def sid_root() -> Path:
    """The root, or a skip (a failure in CI) saying what is missing."""
    if os.geteuid() != 0:
        missing("root (chroot) to run the Debian unstable interpreters")
    if not (SID_ROOT / "usr" / "bin" / "python3.15").exists():
        missing(f"the Debian unstable root {SID_ROOT} with CPython 3.14 and 3.15 (./setup.sh makes it)")
    if not shutil.which("chroot"):
        missing("chroot")
    return SID_ROOT


def sid_python(minor: str) -> Path:
    """python3.X inside the root, as a path on this machine."""
    exe = sid_root() / "usr" / "bin" / f"python{minor}"
    if not exe.exists():
        missing(f"python{minor} in {SID_ROOT}")
    return exe


def chroot_env(extra: dict[str, str] | None = None) -> list[str]:
    """`env -i` with a plain environment for a command inside the root (nothing of this
    machine's virtual environment leaks in); pip there trusts this machine's CA bundle copy."""
    values = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "PIP_CERT": "/etc/coreanalyze/host-ca.crt",
        "SSL_CERT_FILE": "/etc/coreanalyze/host-ca.crt",
        **(extra or {}),
    }
    return ["/usr/bin/env", "-i", *(f"{k}={v}" for k, v in values.items())]


def in_root(*argv: str, timeout: float = 900, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run argv inside the root; its output as text, and an error when it fails."""
    proc = subprocess.run(["chroot", str(sid_root()), *chroot_env(env), *argv], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} in {SID_ROOT} failed ({proc.returncode}): {proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


class SidCrashes:
    """Cores of programs run inside the root, made once per test session."""

    def __init__(self) -> None:
        self.root = sid_root()
        if not kernel_writes_cores_here():
            missing("the kernel writing cores into the crashing process's directory (core_pattern 'core')")
        # Programs read /proc/self (TensorFlow finds its own path there, and CHECK-fails at
        # import without it): mounted for the session, as a container runtime would.
        proc = self.root / "proc"
        self.mounted_proc = not os.path.ismount(proc)
        if self.mounted_proc:
            subprocess.run(["mount", "-t", "proc", "proc", str(proc)], check=True, capture_output=True)
        self.base = CRASH_BASE / uuid.uuid4().hex[:12]
        (self.root / self.base.relative_to("/")).mkdir(parents=True)
        CRASH_BASE.mkdir(exist_ok=True)
        self.base.symlink_to(self.root / self.base.relative_to("/"))
        self.cases: dict[str, CrashCase] = {}

    def crash(
        self, name: str, python: str, script: Path, *companions: Path, env: dict[str, str] | None = None,
        kill_after_ready: int | None = None, timeout: float = 300.0,
    ) -> CrashCase:  # fmt: skip
        """Run `python script` (an interpreter's path inside the root) in a directory of its own,
        the script and its companion files copied beside it, until it dies; its core."""
        if name not in self.cases:
            workdir = self.base / name
            workdir.mkdir()
            for path in (script, *companions):
                shutil.copy2(path, workdir / path.name)
            command = f"cd {workdir} && exec {python} {workdir / script.name}"
            argv = ["chroot", str(self.root), *chroot_env(env), "/bin/sh", "-c", command]
            case = run_to_core(name, argv, workdir, kill_after_ready=kill_after_ready, timeout=timeout)
            case.exe = self.root / python.lstrip("/")
            case.extra["script"] = workdir / script.name
            case.extra["sysroot"] = self.root
            self.cases[name] = case
        return self.cases[name]

    def close(self) -> None:
        shutil.rmtree(self.root / self.base.relative_to("/"), ignore_errors=True)
        self.base.unlink(missing_ok=True)
        if self.mounted_proc:
            subprocess.run(["umount", "--lazy", str(self.root / "proc")], capture_output=True)


def sysroot_without_debug_info(root: Path, where: Path) -> Path:
    """A view of the root without its separate debug files (/usr/lib/debug): every other entry
    a link into the root, as a machine without the -dbg packages is."""
    view = where / "sid-without-debug"
    hidden = Path("usr/lib/debug")
    for path in (Path("."), Path("usr"), Path("usr/lib")):
        (view / path).mkdir(parents=True, exist_ok=True)
        for entry in (root / path).iterdir():
            relative = path / entry.name
            if relative in (Path("usr"), Path("usr/lib"), hidden):
                continue
            (view / relative).symlink_to(entry)
    return view
