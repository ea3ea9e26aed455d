"""The one atomic writer: whole files, plain permissions, never through a planted link."""

from __future__ import annotations

import os

import pytest

from coreanalyze.base.atomicfile import TMP_MARK, write_atomically


def test_replaces_the_file_whole_with_plain_permissions(tmp_path):
    target = tmp_path / "report.html"
    target.write_text("old")
    write_atomically(target, "new ✓")
    assert target.read_text(encoding="utf-8") == "new ✓"
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
    write_atomically(target, b"\x00bytes", durable=True)
    assert target.read_bytes() == b"\x00bytes"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_a_planted_symlink_is_replaced_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "out.json").symlink_to(victim)
    write_atomically(tmp_path / "out.json", "{}")
    assert victim.read_text() == "keep"
    assert not (tmp_path / "out.json").is_symlink()


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "summary.json"
    target.write_text("old")
    with pytest.raises(TypeError):
        write_atomically(target, 42)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert not [p for p in tmp_path.iterdir() if TMP_MARK in p.name]
