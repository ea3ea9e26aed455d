"""rootpaths: a machine's path looked up in a copy of its files as the machine's loader would."""

from __future__ import annotations

import os

from coreanalyze.base.rootpaths import file_in_root, resolve_in_root


def _tree(root):
    lib = root / "usr" / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libz.so.1.3").write_bytes(b"\x7fELF libz")
    (lib / "libz.so.1").symlink_to("libz.so.1.3")
    (lib / "ld-linux-x86-64.so.2").write_bytes(b"\x7fELF ld")
    (root / "usr" / "lib64").mkdir()
    # Absolute, as some distributions ship it: from the machine's root, never this machine's.
    (root / "usr" / "lib64" / "ld-linux-x86-64.so.2").symlink_to("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
    return lib


def test_merged_usr_without_the_links(tmp_path):
    lib = _tree(tmp_path)
    assert resolve_in_root(str(tmp_path), "/lib/x86_64-linux-gnu/libz.so.1") == str(lib / "libz.so.1.3")
    assert resolve_in_root(str(tmp_path), "/lib64/ld-linux-x86-64.so.2") == str(lib / "ld-linux-x86-64.so.2")
    assert resolve_in_root(str(tmp_path), "/usr/lib/x86_64-linux-gnu/libz.so.1.3") == str(lib / "libz.so.1.3")
    assert resolve_in_root(str(tmp_path), "/lib/x86_64-linux-gnu/libnone.so") is None


def test_with_the_links_the_name_is_kept(tmp_path):
    _tree(tmp_path)
    (tmp_path / "lib").symlink_to("usr/lib")
    assert file_in_root(str(tmp_path), "/lib/x86_64-linux-gnu/libz.so.1.3") == str(tmp_path / "lib/x86_64-linux-gnu/libz.so.1.3")


def test_an_unmerged_copy_answers_usr_names(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libc.so.6").write_bytes(b"\x7fELF libc")
    assert resolve_in_root(str(tmp_path), "/usr/lib/libc.so.6") == str(tmp_path / "lib" / "libc.so.6")


def test_nothing_leaves_the_root(tmp_path):
    root = tmp_path / "root"
    (root / "usr" / "lib").mkdir(parents=True)
    outside = tmp_path / "secret.so"
    outside.write_bytes(b"x")
    (root / "usr" / "lib" / "up.so").symlink_to(os.path.join("..", "..", "..", "secret.so"))
    (root / "usr" / "lib" / "loop.so").symlink_to("loop.so")
    assert resolve_in_root(str(root), "/usr/lib/up.so") is None
    assert resolve_in_root(str(root), "/usr/lib/loop.so") is None
    assert file_in_root(str(root), "/../secret.so") is None
    assert resolve_in_root(str(root), "relative/path") is None
