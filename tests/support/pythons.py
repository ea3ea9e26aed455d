"""The CPython interpreters on this machine the tests run crashers under.

pyenv's builds are found by their own paths ($PYENV_ROOT/versions/3.X.*/bin/python3.X, else
~/.pyenv/versions/...), never through PATH: the tests run with the system's PATH, as a new
user's do, where no pyenv shim is. The interpreter's code sits in libpython3.X.so for a build
with a shared libpython (pyenv's) and in the executable itself for one that links it statically
(Debian's /usr/bin/python3.X): interpreter_code_file() says which file it is for a given Python.
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

# pyenv's own rule: $PYENV_ROOT, else ~/.pyenv.
PYENV_PYTHON = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
SYSTEM_PYTHON = Path("/usr/bin/python3")
# The pyenv builds the interpreter matrix runs under (tests/integration/test_interpreters.py).
PYENV_MINORS = ("10", "11", "12", "13")
# A free-threaded CPython 3.13 (3.13t, run from its build tree): ./setup.sh builds it there.
FREE_THREADED_PYTHON = Path(os.environ.get("COREANALYZE_PY313T", "/var/cache/coreanalyze/python3.13t")) / "python"


def pyenv_python(minor: str) -> Path | None:
    """The pyenv-built CPython 3.<minor> on this machine, if any."""
    for d in sorted(PYENV_PYTHON.glob(f"3.{minor}.*"), reverse=True):
        exe = d / "bin" / f"python3.{minor}"
        if exe.exists():
            return exe
    return None


def where_pyenv_python(minor: str) -> str:
    """Where pyenv_python() looks for CPython 3.<minor>, for messages."""
    return f"{PYENV_PYTHON}/3.{minor}.*/bin/python3.{minor}"


def require_pyenv_python(minor: str) -> Path:
    """The pyenv-built CPython 3.<minor>; without it the test skips, or fails in CI, and says
    where it looked (./setup.sh does not build it: `pyenv install 3.<minor>`)."""
    from support.require import missing

    exe = pyenv_python(minor)
    if exe is None:
        missing(f"CPython 3.{minor} built by pyenv, looked for as {where_pyenv_python(minor)} (`pyenv install 3.{minor}`)")
    return exe


def require_free_threaded_python() -> Path:
    """The free-threaded CPython 3.13 that ./setup.sh builds; without it the test skips, or fails
    in CI, and says where it looked."""
    from support.require import missing

    if not FREE_THREADED_PYTHON.is_file():
        missing(f"a free-threaded CPython 3.13 at {FREE_THREADED_PYTHON} (./setup.sh builds it)")
    return FREE_THREADED_PYTHON


_MAPPED_AT = r"""
import ctypes, os
address = ctypes.cast(ctypes.pythonapi.PyErr_Occurred, ctypes.c_void_p).value
with open("/proc/self/maps") as maps:
    for line in maps:
        fields = line.split(maxsplit=5)
        low, high = (int(x, 16) for x in fields[0].split("-"))
        if low <= address < high:
            print(os.path.realpath(fields[5].strip()))
            break
"""


@functools.cache
def interpreter_code_file(python: Path | str) -> Path:
    """The file that holds the interpreter's own code (PyErr_Occurred, _PyEval_EvalFrameDefault,
    ...) in processes of `python` (a virtual environment's bin/python included): its
    libpython3.X.so when it links a shared one, else its base executable. Asked of the
    interpreter itself: the file mapped where its PyErr_Occurred is."""
    out = subprocess.run([str(python), "-I", "-c", _MAPPED_AT], capture_output=True, text=True, timeout=120, check=True)
    path = out.stdout.strip()
    assert path.startswith("/"), f"{python}: no file maps its PyErr_Occurred: {out.stdout!r} {out.stderr[-2000:]!r}"
    return Path(path)


def is_interpreter_code(module: str | None, python: Path | str) -> bool:
    """Whether `module` (a module path a core names) is the file of `python`'s own code,
    whichever file that is (interpreter_code_file)."""
    return bool(module) and Path(os.path.realpath(module)) == interpreter_code_file(python)
