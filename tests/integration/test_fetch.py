"""--fetch on a real TensorFlow core whose site-packages are out of reach.

The sysroot holds only what the core mapped outside site-packages (the OS libraries and the
interpreter); TensorFlow's and NumPy's libraries must come from their wheels. A local index
(a --find-links directory filled by pip from its cache) stands in for a private index: the
analysis runs with PIP_NO_INDEX, so no test depends on the public index.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.clirun import analyze_json, crashed_thread, run_cli
from support.publicindex import PUBLIC_INDEX, public_index_reachable, use_public_index
from support.tfcores import installed_version

from coreanalyze.corefile import read_core
from coreanalyze.corefile.modules import module_table
from coreanalyze.fetch import fetch_missing
from coreanalyze.fetch.verify import mismatch
from coreanalyze.fetch.wheels import wheel_file_prefix
from coreanalyze.process.process import Process

pytestmark = pytest.mark.tf

OTHER_NUMPY_VERSIONS = ("2.3.5", "2.2.6", "2.0.2", "1.26.4")


def pip_download(requirement: str, dest: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(dest), requirement],
        check=True, capture_output=True, text=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def far_away(tf_reports, tmp_path_factory):
    """(case, local report, sysroot of OS files only, find-links dir, pip environment)."""
    case, local, _seconds = tf_reports("kernel_check_failure")
    root = tmp_path_factory.mktemp("fetch")
    sysroot = root / "sysroot"
    for module in local["modules"]:
        path = module["path"]
        if "/site-packages/" in path or not os.path.isfile(path):
            continue
        link = sysroot / path.lstrip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(path)
    links = root / "links"
    tf = local["environment"]["tensorflow_package"]
    pip_download(f"{tf}=={installed_version(case.exe, tf)}", links)
    pip_download(f"numpy=={installed_version(case.exe, 'numpy')}", links)
    env = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(links), "COREANALYZE_CACHE_DIR": str(root / "cache")}
    return case, local, sysroot, links, env


def frames(report: dict, kind: str) -> list[str]:
    return [f["function"] for f in crashed_thread(report)["frames"] if f["kind"] == kind]


def test_fetched_wheels_give_the_local_analysis(far_away, monkeypatch):
    case, local, sysroot, _, env = far_away
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    without = analyze_json(case.core, "--python", str(case.exe), "--sysroot", str(sysroot))
    assert any("--fetch" in w for w in without["warnings"])

    fetched = analyze_json(case.core, "--python", str(case.exe), "--sysroot", str(sysroot), "--fetch")
    for key in ("category", "op", "abort_message"):
        assert fetched["classification"].get(key) == local["classification"].get(key), key
    assert fetched["classification"]["culprit"]["function"] == local["classification"]["culprit"]["function"]
    assert frames(fetched, "native") == frames(local, "native")
    assert frames(fetched, "python") == frames(local, "python")
    tf_modules = [m for m in fetched["modules"] if "/site-packages/tensorflow/" in m["path"]]
    assert tf_modules and all(m["status"] == "ok" for m in tf_modules), [
        (m["path"], m["status"], m.get("source")) for m in tf_modules if m["status"] != "ok"
    ]
    assert all(m["source"].endswith(".whl") and m["source"].startswith("tensorflow") for m in tf_modules)
    # Only TensorFlow's and NumPy's wheels are on this index: the rest is said, not suggested.
    assert not any("--fetch downloads" in w for w in fetched["warnings"])
    assert any(w.startswith("--fetch: ") and "could not be fetched" in w for w in fetched["warnings"])
    assert any(a["outcome"].startswith("used") for a in fetched["environment"]["fetch_attempts"])


def test_a_wheel_of_another_version_is_refused(far_away, monkeypatch, tmp_path):
    case, _, sysroot, links, env = far_away
    installed = installed_version(case.exe, "numpy")
    other = next(v for v in OTHER_NUMPY_VERSIONS if v != installed)
    pip_download(f"numpy=={other}", links)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with read_core(case.core) as notes:
        modules = module_table(notes, executable=str(case.exe), sysroot=str(sysroot))
        claimed = [{"name": "numpy", "module": "numpy", "version": other, "version_from": "__version__"}]
        result = fetch_missing(Process(notes), modules, claimed, python_version="3.11", arch="x86_64", cache=tmp_path)
        # A vendored library the two versions share byte for byte may be used: it is the same file.
        assert all(mismatch(Process(notes), path, file) is None for path, file in result.files.items())
    assert not any("_multiarray_umath" in path for path in result.files)
    (attempt,) = [a for a in result.attempts if a.distribution == "numpy"]
    assert attempt.wheel.startswith(f"numpy-{other}-")
    # The outcome names the first few refusals (which ones depends on the versions' file lists);
    # the module table says why each library was refused.
    assert "refused" in attempt.outcome
    assert "build-id" in attempt.outcome or "first page" in attempt.outcome
    (why,) = [why for path, why in result.unfetched.items() if "_multiarray_umath" in path]
    assert "build-id" in why and f"numpy {other}" in why
    kept = {p.name for p in tmp_path.glob("fetched/*/*")}
    assert not any("_multiarray_umath" in name for name in kept)  # nothing refused is kept


def test_a_batch_downloads_each_wheel_once(far_away, tf_cores, tmp_path):
    """Two cores of the same TensorFlow, two workers, one cache: each wheel is downloaded once."""
    case, local, sysroot, _, env = far_away
    other = tf_cores.get("graph_check_failure")
    out = tmp_path / "batch"
    env = dict(env, COREANALYZE_CACHE_DIR=str(tmp_path / "cache"))  # nothing downloaded yet
    run = run_cli(
        "batch", str(case.core), str(other.core), "--out", str(out), "-j", "2",
        "--python", str(case.exe), "--sysroot", str(sysroot), "--fetch", env=env, timeout=1800,
    )  # fmt: skip
    assert run.code == 0, run.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["totals"]["analyzed"] == 2, summary
    tf = local["environment"]["tensorflow_package"]
    downloaded = summary["wheels_downloaded"]
    assert sorted(downloaded) == sorted(p.name for p in (tmp_path / "cache" / "fetch" / "wheels").glob("*.whl"))
    assert downloaded and all(count == 1 for count in downloaded.values()), downloaded
    assert any(w.startswith(wheel_file_prefix(tf, installed_version(case.exe, tf))) for w in downloaded), downloaded
    for result in out.glob("reports/*.json"):
        report = json.loads(result.read_text())
        tf_modules = [m for m in report["modules"] if "/site-packages/tensorflow/" in m["path"]]
        assert tf_modules and all(m["status"] == "ok" and m["source"] in downloaded for m in tf_modules)


@pytest.mark.public_index
def test_the_public_index(far_away, monkeypatch, tmp_path, in_ci):
    """The one test that uses the public PyPI: NumPy's libraries of the core fetched from there."""
    if not public_index_reachable() and not in_ci:
        pytest.skip(f"{PUBLIC_INDEX} is not reachable (in CI this test must run)")
    case, _, sysroot, _, _ = far_away
    log = tmp_path / "pip.log"
    use_public_index(monkeypatch)
    monkeypatch.setenv("PIP_LOG", str(log))
    with read_core(case.core) as notes:
        modules = [m for m in module_table(notes, executable=str(case.exe), sysroot=str(sysroot)) if "/site-packages/numpy" in m.path]
        numpy = {"name": "numpy", "module": "numpy", "version": installed_version(case.exe, "numpy"), "version_from": "__version__"}
        result = fetch_missing(Process(notes), modules, [numpy], python_version="3.11", arch="x86_64", cache=tmp_path / "cache")
        assert result.files and all(mismatch(Process(notes), path, file) is None for path, file in result.files.items())
    assert any("_multiarray_umath" in path for path in result.files)
    (attempt,) = result.attempts
    assert attempt.downloaded and attempt.outcome.startswith("used"), attempt
    assert "pypi.org" in log.read_text() or "pythonhosted.org" in log.read_text()
