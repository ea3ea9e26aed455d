"""A TensorFlow core analyzed far from the machine that dumped it: its venv and interpreter gone.

The test makes a virtual environment of its own (the interpreter running the tests as its
base), installs the same TensorFlow and dependencies into it from a local --find-links
directory (filled by pip from its cache, no index needed after setup), and crashes a scenario
with it. After the analysis with everything in place, the venv is renamed out of reach and the
core is analyzed again with a sysroot holding only the OS libraries (no interpreter, no
site-packages) and --fetch, without --python: the report must say the same thing.

The interpreter's own frames (python3.X, libpython3.X) cannot be named without its files; the
native frames are compared up to the first of them, which is where Python takes over.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from support.clirun import analyze_json, crashed_thread
from support.sysroots import link_os_directories
from support.tfcores import TFCoreCache, require_tensorflow

pytestmark = pytest.mark.tf

SCENARIO = "kernel_check_failure"
# Every installed distribution that tensorflow-cpu (or tensorflow) needs, with its version.
CLOSURE = """
import importlib.metadata as md, json, sys
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
todo, found = [sys.argv[1]], {}
while todo:
    name = canonicalize_name(todo.pop())
    if name in found:
        continue
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        continue
    found[name] = dist.version
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            todo.append(req.name)
print(json.dumps(found))
"""


def run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def tensorflow_requirements(python: Path) -> list[str]:
    package = next(p for p in ("tensorflow-cpu", "tensorflow") if json.loads(run(str(python), "-c", CLOSURE, p)))
    return [f"{name}=={version}" for name, version in json.loads(run(str(python), "-c", CLOSURE, package)).items()]


def os_sysroot(root: Path) -> Path:
    """The machine's library directories, as a sysroot of a machine without this interpreter:
    /lib, /usr/lib and the like, nothing of /usr/bin or of pyenv."""
    sysroot = root / "os-only"
    link_os_directories(sysroot)
    return sysroot


@pytest.fixture(scope="module")
def far_away(tmp_path_factory):
    """(case, local report, venv's old path, sysroot, pip environment); the venv renamed."""
    python = require_tensorflow()
    root = tmp_path_factory.mktemp("far-away")
    links = root / "links"
    requirements = tensorflow_requirements(python)
    run(str(python), "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(links), *requirements)
    venv = root / "venv"
    base = run(str(python), "-c", "import sys; print(sys._base_executable)").strip()
    run(base, "-m", "venv", "--without-pip", str(venv))
    run(
        str(python), "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
        "--no-index", "--no-deps", "--find-links", str(links), *requirements,
    )  # fmt: skip
    case = TFCoreCache(root / "cores", venv / "bin" / "python").get(SCENARIO)
    local = analyze_json(case.core)
    venv.rename(root / "venv-moved")
    env = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(links), "COREANALYZE_CACHE_DIR": str(root / "cache")}
    yield case, local, venv, os_sysroot(root), env
    shutil.rmtree(root, ignore_errors=True)  # ~1.2 GB: the venv, its wheels, the core


def native_until_interpreter(report: dict) -> list[str | None]:
    """The crashed thread's native frames down to the first frame in the interpreter's files."""
    out = []
    for frame in crashed_thread(report)["frames"]:
        if frame["kind"] != "native":
            continue
        if os.path.basename(frame.get("module") or "").startswith(("python", "libpython")):
            break
        out.append(frame["function"])
    return out


def python_frames(report: dict) -> list[tuple]:
    return [(f["function"], f["file"], f["line"]) for f in crashed_thread(report)["frames"] if f["kind"] == "python"]


def packages(report: dict) -> dict[str, str]:
    # Names compared as PEP 503 normalizes them (ml_dtypes == ml-dtypes).
    return {re.sub(r"[-_.]+", "-", p["name"]).lower(): p["version"] for p in report["environment"]["packages"]}


def test_venv_gone_fetch_gives_the_local_analysis(far_away, monkeypatch):
    case, local, venv, sysroot, env = far_away
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert not venv.exists()
    assert python_frames(local) and "python_runtime" not in local["environment"]

    far = analyze_json(case.core, "--sysroot", str(sysroot), "--fetch")
    for key in ("category", "op", "abort_message"):
        assert far["classification"].get(key) == local["classification"].get(key), key
    assert far["classification"]["culprit"]["function"] == local["classification"]["culprit"]["function"]
    native = native_until_interpreter(local)
    assert len(native) > 10 and native_until_interpreter(far) == native
    assert python_frames(far) == python_frames(local)
    assert far.get("launched_from") == local.get("launched_from")
    # Read from the core alone: the interpreter is not in the sysroot.
    assert far["environment"]["python_runtime"].startswith("located by scanning the core")
    assert far["environment"]["python_version"].split(".")[:2] == local["environment"]["python_version"].split(".")[:2]
    # The packages and versions are the dead process's. Here a package is named by its
    # installed dist-info; far away by the wheel's name. A version only the local files tell
    # may be missing far away, none may differ; protobuf (imported as the namespace package
    # `google`) is known by its module google.protobuf.
    far_packages, local_packages = packages(far), packages(local)
    assert far_packages.items() <= local_packages.items()
    assert {"tensorflow-cpu", "numpy", "keras", "protobuf"} <= set(far_packages)
    tf_modules = [m for m in far["modules"] if "/site-packages/tensorflow/" in m["path"]]
    assert tf_modules and all(m["status"] == "ok" for m in tf_modules), [
        (m["path"], m["status"], m.get("source")) for m in tf_modules if m["status"] != "ok"
    ]
    assert all(m["source"].endswith(".whl") and m["source"].startswith("tensorflow") for m in tf_modules)
