"""The built wheel carries the templates, gdb scripts and rules, and works outside the source tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from support.contract import check_text
from support.paths import REPO
from support.pythons import SYSTEM_PYTHON

PYCRASHERS = REPO / "tests" / "pycrashers"


def test_wheel_installs_and_runs_in_a_fresh_venv(cores, tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO)],
        check=True, capture_output=True, text=True,
    )
    wheel = next(wheels.glob("coreanalyze-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("coreanalyze/templates/") and n.endswith(".j2") for n in names), names
    # gdb_scripts/ and templates/ live at the repository's top level; the wheel has them inside.
    for script in ("pystacks.py", "pywalker/__init__.py", "coreanalyze.py", "symbolfiles.py"):
        assert f"coreanalyze/gdb_scripts/{script}" in names
    # The walker's modules, and its layouts as data beside them.
    walker = REPO / "gdb_scripts" / "pywalker"
    shipped = [p.relative_to(REPO / "gdb_scripts").as_posix() for p in [*walker.glob("*.py"), *walker.glob("layouts/*.json")]]
    assert len(shipped) > 10 and {f"coreanalyze/gdb_scripts/{p}" for p in shipped} <= set(names)
    assert any(n.startswith("coreanalyze/classify/") and n.endswith(".toml") for n in names)
    assert {"coreanalyze/opinstance/dtypes.toml", "coreanalyze/opinstance/tflite_ops.toml",
            "coreanalyze/opinstance/layouts/tflite.toml", "coreanalyze/opinstance/layouts/probe.cc"} <= set(names)
    assert any(n.startswith("coreanalyze/opinstance/layouts/tensorflow-") for n in names)
    assert "coreanalyze/schema/report.schema.json" in names
    # The crash guard's startup hook sits in site-packages itself, where the interpreter runs it.
    assert "coreanalyze-guard.pth" in names and "coreanalyze/capture/coreanalyze-guard.pth" in names

    venv = tmp_path / "venv"
    # A clean environment with nothing but the wheel and what its metadata declares (from pip's
    # cache after setup): a dependency missing from pyproject.toml fails here.
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    installed = subprocess.run([venv / "bin/python", "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                str(wheel)], capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    case = cores.c_crash("null_thread")
    run = subprocess.run(
        [venv / "bin/coreanalyze", str(case.core), "--python", str(case.exe), "--format", "json", "-o", "-"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert '"store_result"' in run.stdout
    check_text(run.stdout, "the installed wheel's JSON report")
    schema = subprocess.run([venv / "bin/coreanalyze", "--schema"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert schema.returncode == 0 and json.loads(schema.stdout)["title"] == "coreanalyze report"
    located = subprocess.run(
        [venv / "bin/python", "-c", "import coreanalyze; print(coreanalyze.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout
    assert str(venv) in located, "the test must exercise the installed wheel, not the source tree"
    assert_python_frames_and_html(venv, cores, tmp_path / "wheel-run")
    assert_the_guard_arms_from_the_environment(venv, tmp_path / "guarded")


def assert_the_guard_arms_from_the_environment(venv: Path, out: Path) -> None:
    """COREANALYZE_GUARD arms a plain interpreter of the environment the wheel went into, by the
    startup hook alone, with the kernel writing no core (ulimit -c 0)."""
    import resource
    import signal

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COREANALYZE_GUARD")}
    env["COREANALYZE_GUARD"] = str(out)
    crash = subprocess.run(
        [venv / "bin/python", "-c", "import ctypes; ctypes.string_at(0x60)"], env=env, capture_output=True, text=True, timeout=300,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)),
    )  # fmt: skip
    assert crash.returncode == -signal.SIGSEGV, crash.stderr
    assert "coreanalyze: process" in crash.stderr and "null-deref" in crash.stderr, crash.stderr
    (report,) = out.glob("*.json")
    check_text(report.read_text(), "the installed guard's JSON report")
    assert json.loads(report.read_text())["capture"]["by"] == "guard"


def assert_python_frames_and_html(venv: Path, cores, workdir: Path) -> None:
    """The installed tool finds its gdb scripts (Python frames) and templates (HTML)."""
    workdir.mkdir()
    case = cores.python_crash("three_deep-packaging", SYSTEM_PYTHON.resolve(), PYCRASHERS / "three_deep.py")
    run = subprocess.run(
        [venv / "bin/coreanalyze", str(case.core), "--python", str(case.exe), "-o", "report.html"],
        cwd=workdir, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "from Python load_weights" in " ".join(run.stdout.split())
    assert (workdir / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_editable_install_runs_from_the_source_tree(cores, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    installed = subprocess.run([venv / "bin/python", "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                "-e", str(REPO)], capture_output=True, text=True, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr
    shipped = subprocess.run(
        [venv / "bin/python", "-c", "from coreanalyze.base import resources; print(resources.GDB_SCRIPTS, resources.TEMPLATES, sep='\\n')"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # one a line: a clone's path may hold spaces
    assert shipped == [str(REPO / "gdb_scripts"), str(REPO / "templates")]
    assert_python_frames_and_html(venv, cores, tmp_path / "editable-run")
