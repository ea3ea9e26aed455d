"""Session-wide: the support package on sys.path, unit tests first, a private cache."""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path

import pytest

# tests/support is imported as the package `support` by the tests of both folders.
sys.path.insert(0, str(Path(__file__).resolve().parent))


UNIT_TESTS = Path(__file__).resolve().parent / "unit"


def pytest_report_header(config):
    """Which interpreters the tests run crashers under, found by their own paths (never PATH):
    a missing one fails its tests in CI and skips them elsewhere."""
    from support.pythons import FREE_THREADED_PYTHON, PYENV_MINORS, SYSTEM_PYTHON, pyenv_python, where_pyenv_python

    found = [f"system {SYSTEM_PYTHON} -> {SYSTEM_PYTHON.resolve()}" if SYSTEM_PYTHON.exists() else f"system {SYSTEM_PYTHON}: MISSING"]
    for minor in PYENV_MINORS:
        exe = pyenv_python(minor)
        found.append(f"3.{minor} {exe}" if exe else f"3.{minor}: MISSING (looked for {where_pyenv_python(minor)})")
    ft = FREE_THREADED_PYTHON
    found.append(f"3.13t {ft}" if ft.is_file() else f"3.13t: MISSING (looked for {ft}; ./setup.sh builds it)")
    return ["interpreters: " + "; ".join(found)]


def pytest_collection_modifyitems(session, config, items):
    """The lint check and the unit tests (no gdb, no cores: seconds) run first."""
    items.sort(key=lambda item: 0 if UNIT_TESTS in Path(item.path).parents else 1)


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory):
    """Symbol indexes and library copies go to a per-session cache, not the user's."""
    os.environ["COREANALYZE_CACHE_DIR"] = str(tmp_path_factory.mktemp("coreanalyze-cache"))
    yield


@pytest.fixture(scope="session", autouse=True)
def reports_fit_the_schema():
    """Every JSON report rendered in the tests' own process is checked against the shipped
    JSON Schema, as support.clirun checks those of the command line."""
    from support.contract import check_text

    from coreanalyze.render import jsonout

    plain = jsonout.render

    def render_and_check(report, classification_extra=None):
        text = plain(report, classification_extra)
        check_text(text, "a JSON report rendered in-process")
        return text

    jsonout.render = render_and_check
    yield
    jsonout.render = plain


# ---------------------------------------------------------------------------------------------
# TensorFlow's crash cores (support/tfcores.py): made once per session, from its start on


@pytest.fixture(scope="session")
def tf_cores(tmp_path_factory, private_cache_dir):
    """Real TensorFlow crash cores (support/tfcores.py), each built once: `tf_cores.get(
    "kernel_check_failure")` -> CrashCase. The cores (~300 MB each) live in one directory of this
    session, removed when the session ends."""
    from support.tfcores import require_tensorflow, tf_core_cache

    with tf_core_cache(require_tensorflow(), tmp_path_factory.getbasetemp()) as cache:
        yield cache


@pytest.fixture(scope="session")
def tf_reports(tf_cores):
    """`tf_reports("kernel_check_failure")` -> (case, report, seconds): the plain analysis of a
    TensorFlow core (`coreanalyze CORE --python EXE`, JSON), run once per core and session and
    read by every test that checks it (the verdicts, the op, the triage agreement, ...); each
    caller gets its own copy of the report. `seconds`: how long that one analysis took."""

    def get(name: str):
        case, report, seconds = tf_cores.report(name)
        return case, copy.deepcopy(report), seconds

    return get


@pytest.fixture(scope="session")
def older_tensorflow(tmp_path_factory):
    """The virtual environment of the older TensorFlow (support.tfcores.make_older_python),
    made once per session: `older_tensorflow.result()` -> its bin/python."""
    from support.ahead import Ahead

    where = tmp_path_factory.mktemp("older-tensorflow")

    from support.tfcores import make_older_python

    made = Ahead(lambda: make_older_python(where))
    yield made
    made.wait()
