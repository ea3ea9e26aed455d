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
    # The packages of the top-level gdb_scripts/ (the walker is one of its own), mapped below.
    scripts = {
        ".".join(("coreanalyze", *p.parent.relative_to(REPO).parts))
        for p in (REPO / "gdb_scripts").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert scripts == {"coreanalyze.gdb_scripts", "coreanalyze.gdb_scripts.pywalker"}
    assert set(setuptools["packages"]) == found | scripts | {"coreanalyze.templates"}
    assert setuptools["package-dir"] == {"coreanalyze.gdb_scripts": "gdb_scripts", "coreanalyze.templates": "templates"}
    assert (REPO / "gdb_scripts" / "pywalker" / "__init__.py").is_file() and (REPO / "templates" / "report.html.j2").is_file()
    # The walker's layouts are data beside it, shipped with it.
    assert setuptools["package-data"]["coreanalyze.gdb_scripts.pywalker"] == ["layouts/*.json"]
    assert sorted(p.name for p in (REPO / "gdb_scripts" / "pywalker" / "layouts").glob("*.json"))
    assert not (REPO / "coreanalyze" / "gdb_scripts").exists() and not (REPO / "coreanalyze" / "templates").exists()
