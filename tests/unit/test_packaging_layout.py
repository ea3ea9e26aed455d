"""pyproject.toml lists every package, and maps the top-level gdb_scripts/ and templates/ into
the wheel's coreanalyze/ (a package missing from the list would silently leave the wheel)."""

from __future__ import annotations

from pathlib import Path

from coreanalyze.base import tomlfile

REPO = Path(__file__).resolve().parents[2]


def test_every_package_is_listed_and_the_shipped_directories_are_mapped():
    setuptools = tomlfile.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {
        ".".join(p.parent.relative_to(REPO).parts)
        for p in (REPO / "coreanalyze").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert set(setuptools["packages"]) == found | {"coreanalyze.gdb_scripts", "coreanalyze.templates"}
    assert setuptools["package-dir"] == {"coreanalyze.gdb_scripts": "gdb_scripts", "coreanalyze.templates": "templates"}
    assert (REPO / "gdb_scripts" / "pywalker.py").is_file() and (REPO / "templates" / "report.html.j2").is_file()
    assert not (REPO / "coreanalyze" / "gdb_scripts").exists() and not (REPO / "coreanalyze" / "templates").exists()
