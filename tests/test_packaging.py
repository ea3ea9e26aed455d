"""The built wheel carries the templates, gdb scripts and rules, and works outside the source tree."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_wheel_installs_and_runs_in_a_fresh_venv(cores, tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(REPO)],
        check=True, capture_output=True, text=True,
    )
    wheel = next(wheels.glob("coreanalyze-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("coreanalyze/templates/") and n.endswith(".j2") for n in names), names
    assert "coreanalyze/gdb_scripts/pystacks.py" in names
    assert any(n.startswith("coreanalyze/classify/") and n.endswith(".toml") for n in names)

    venv = tmp_path / "venv"
    # The venv sees the already-installed dependencies; the package itself comes only from the wheel.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    subprocess.run([venv / "bin/python", "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True,
                   capture_output=True, text=True)
    case = cores.c_crash("null_thread")
    run = subprocess.run(
        [venv / "bin/coreanalyze", str(case.core), "--python", str(case.exe), "--format", "json", "-o", "-"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert '"store_result"' in run.stdout
    located = subprocess.run(
        [venv / "bin/python", "-c", "import coreanalyze; print(coreanalyze.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout
    assert str(venv) in located, "the test must exercise the installed wheel, not the source tree"
