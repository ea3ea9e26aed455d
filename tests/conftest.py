"""Session-wide: the support package on sys.path, unit tests first, a private cache."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# tests/support is imported as the package `support` by the tests of both folders.
sys.path.insert(0, str(Path(__file__).resolve().parent))


UNIT_TESTS = Path(__file__).resolve().parent / "unit"


def pytest_collection_modifyitems(session, config, items):
    """The lint check and the unit tests (no gdb, no cores: seconds) run first."""
    items.sort(key=lambda item: 0 if UNIT_TESTS in Path(item.path).parents else 1)


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory):
    """Symbol indexes and library copies go to a per-session cache, not the user's."""
    os.environ["COREANALYZE_CACHE_DIR"] = str(tmp_path_factory.mktemp("coreanalyze-cache"))
    yield
