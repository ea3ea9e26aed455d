"""Which wheel installed a shared library (coreanalyze.process.packages): read from the wheels' RECORD
files, and kept on disk per site-packages directory until the directory changes."""

from __future__ import annotations

import os

import pytest

from coreanalyze.process import packages


def _install(site, name, version, files):
    dist = site / f"{name}-{version}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nA package.\n")
    (dist / "RECORD").write_text("".join(f"{f},sha256=x,1\n" for f in files) + f"{dist.name}/RECORD,,\n")


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.setenv("COREANALYZE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(packages, "_index", {})
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    _install(site, "numpy", "2.1.0", ["numpy/_core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so", "numpy/__init__.py"])
    return site


def test_a_library_is_owned_by_the_wheel_that_recorded_it(site):
    so = site / "numpy" / "_core" / "_multiarray_umath.cpython-311-x86_64-linux-gnu.so"
    assert packages.owner_of(str(so)) == ("numpy", "2.1.0")
    assert packages.owner_of(str(site / "numpy" / "__init__.py")) is None  # only libraries are indexed
    assert packages.owner_of("/usr/lib/x86_64-linux-gnu/libc.so.6") is None


def test_the_index_is_kept_on_disk_until_the_directory_changes(site, monkeypatch):
    so = str(site / "numpy" / "_core" / "_multiarray_umath.cpython-311-x86_64-linux-gnu.so")
    assert packages.owner_of(so) == ("numpy", "2.1.0")
    # A new process (no index in memory) reads the kept one, not the wheels.
    monkeypatch.setattr(packages, "_index", {})
    monkeypatch.setattr(packages, "_read_index", lambda site: pytest.fail("read the wheels again"))
    assert packages.owner_of(so) == ("numpy", "2.1.0")
    monkeypatch.undo()
    # Another wheel installed: the directory's mtime changes and the wheels are read again.
    monkeypatch.setattr(packages, "_index", {})
    _install(site, "ml_dtypes", "0.4.0", ["ml_dtypes/_ml_dtypes_ext.cpython-311-x86_64-linux-gnu.so"])
    os.utime(site, ns=(1, 1))
    assert packages.owner_of(str(site / "ml_dtypes" / "_ml_dtypes_ext.cpython-311-x86_64-linux-gnu.so")) == ("ml_dtypes", "0.4.0")


def test_a_damaged_kept_index_is_read_again_from_the_wheels(site):
    so = str(site / "numpy" / "_core" / "_multiarray_umath.cpython-311-x86_64-linux-gnu.so")
    packages.owner_of(so)
    (kept,) = (site.parents[2] / "cache" / packages.INDEX_CACHE).iterdir()
    kept.write_text("{not json")
    packages._index.clear()
    assert packages.owner_of(so) == ("numpy", "2.1.0")


def test_metadata_headers_are_read_as_the_email_parser_reads_them():
    from email.parser import HeaderParser

    from coreanalyze.process.packages import metadata_headers

    text = (
        "Metadata-Version: 2.1\n"
        "name: tensorflow-cpu\n"  # field names are case-insensitive
        "Summary: TensorFlow is an open source machine learning framework for everyone.\n"
        "Classifier: Programming Language :: Python\n"
        "  :: 3 :: Only\n"  # a folded line is no header
        "Version:  2.21.0 \n"
        "Name: a-later-name\n"  # the first one counts
        "\n"
        "Version: 9.9 (the description, not a header)\n"
    )
    parsed = HeaderParser().parsestr(text, headersonly=True)
    assert metadata_headers(text, ("name", "version")) == {"name": parsed["Name"], "version": parsed["Version"].strip()}
    assert metadata_headers("\nName: x\n", ("name",)) == {}
