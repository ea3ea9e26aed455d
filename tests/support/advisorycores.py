"""Real cores of a TensorFlow older than its security advisories' fixes (tests/advisory_tensorflow.txt:
2.10.0), for the known crashes generated from those advisories (coreanalyze/known/tfsa.toml).

TensorFlow 2.10 has wheels for CPython 3.7-3.10 only, and every release with a wheel for a newer
Python already has the fixes: the environment is made from pyenv's CPython 3.10 (the interpreter
tests' own) and installed with --no-index from the wheels ./setup.sh keeps outside the repository
($COREANALYZE_ADVISORY_WHEELS, default /var/cache/coreanalyze/wheels/advisory-tensorflow), so a
test run needs no network. Each scenario of tf_corpus/advisories/ is a reproducer of one advisory
that really kills the process; the kernel writes its core (about 220 MB each).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from support.coregen import CrashCase, run_to_core
from support.paths import TESTS, TF_CORPUS
from support.pythons import require_pyenv_python
from support.require import missing

REQUIREMENTS = TESTS / "advisory_tensorflow.txt"
SCENARIOS = TF_CORPUS / "advisories"
WHEELS = Path(os.environ.get("COREANALYZE_ADVISORY_WHEELS", "/var/cache/coreanalyze/wheels/advisory-tensorflow"))


def requirement(package: str) -> str:
    """The pinned version of `package` in tests/advisory_tensorflow.txt."""
    for line in REQUIREMENTS.read_text().splitlines():
        name, _, version = line.partition("==")
        if name.strip() == package:
            return version.strip()
    raise LookupError(package)


def make_advisory_python(where: Path) -> Path:
    """A virtual environment of pyenv's CPython 3.10 with the advisories' TensorFlow."""
    base = require_pyenv_python("10")
    if not any(WHEELS.glob("tensorflow_cpu-*.whl")):
        missing(f"the wheels of tests/advisory_tensorflow.txt in {WHEELS} (./setup.sh downloads them)")
    venv = where / "venv"
    made = subprocess.run([str(base), "-m", "venv", str(venv)], capture_output=True, text=True, timeout=600)
    if made.returncode != 0:
        missing(f"cannot make a virtual environment with {base}: {made.stderr[-2000:]}")
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index",
         "--find-links", str(WHEELS), "-r", str(REQUIREMENTS)],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    if installed.returncode != 0:
        missing(f"cannot install tests/advisory_tensorflow.txt from {WHEELS} (run ./setup.sh): {installed.stderr[-2000:]}")
    return python


def advisory_core(python: Path, scenario: str, where: Path) -> CrashCase:
    """Run tf_corpus/advisories/<scenario>.py with `python` until it dies; its core."""
    script = SCENARIOS / f"{scenario}.py"
    env = {"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"}
    return run_to_core(scenario, [str(python), str(script)], where / scenario, env=env, timeout=300)
