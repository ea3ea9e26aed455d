"""Session-wide: the support package on sys.path, unit tests first, a private cache."""

from __future__ import annotations

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
    from support.pythons import PYENV_MINORS, SYSTEM_PYTHON, pyenv_python, where_pyenv_python

    found = [f"system {SYSTEM_PYTHON} -> {SYSTEM_PYTHON.resolve()}" if SYSTEM_PYTHON.exists() else f"system {SYSTEM_PYTHON}: MISSING"]
    for minor in PYENV_MINORS:
        exe = pyenv_python(minor)
        found.append(f"3.{minor} {exe}" if exe else f"3.{minor}: MISSING (looked for {where_pyenv_python(minor)})")
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
