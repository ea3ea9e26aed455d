"""The suite's files can be collected together: pytest imports test modules by their base name
(the folders are no packages), so two files of one name in unit/ and integration/ stop the
whole run at collection."""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_test_modules_have_unique_base_names():
    names = Counter(p.name for folder in ("unit", "integration") for p in (TESTS / folder).glob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
