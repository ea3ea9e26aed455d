"""The module table on real cores: build-ids from the core against files on this machine."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support.coregen import compile_c, run_to_core
from support.paths import CRASHERS
from support.require import require

from coreanalyze.corefile import read_core
from coreanalyze.corefile.modules import elf_build_id, module_table


@pytest.fixture(scope="module")
def null_thread(cores):
    case = cores.c_crash("null_thread")
    with read_core(case.core) as notes:
        yield case, notes


@pytest.fixture(scope="module")
def rebuilt_exe(null_thread, tmp_path_factory) -> Path:
    """The same crasher built again with a -D flag that changes its code: a new build-id."""
    case, _ = null_thread
    out = tmp_path_factory.mktemp("rebuilt") / "null_thread"
    compile_c(CRASHERS / "null_thread.c", out, ("-Dstore_result=store_result_v2",))
    assert elf_build_id(out) != elf_build_id(case.exe)
    return out


def by_path(modules):
    return {m.path: m for m in modules}


def test_every_mapped_elf_object_matches_its_local_file(null_thread):
    case, notes = null_thread
    modules = module_table(notes)
    table = by_path(modules)
    assert len(table) == len(modules)  # one row per file
    assert str(case.exe) in table
    names = {os.path.basename(p) for p in table}
    assert "libc.so.6" in names
    assert any(n.startswith("ld-linux") for n in names)
    for m in modules:
        assert m.status == "ok", m
        assert m.local_path == m.path
        assert m.build_id == m.local_build_id == elf_build_id(m.path)
        spans = [x for x in notes.mappings if x.path == m.path]
        assert (m.start, m.end) == (min(x.start for x in spans), max(x.end for x in spans))
    assert [m.start for m in modules] == sorted(m.start for m in modules)
    assert table[str(case.exe)].build_id == elf_build_id(case.exe)


def test_non_elf_mappings_are_left_out(cores):
    case = cores.c_crash("sigbus")
    with read_core(case.core) as notes:
        assert any(m.path.endswith("sigbus.data") for m in notes.mappings)
        modules = module_table(notes)
        assert not any(m.path.endswith("sigbus.data") for m in modules)
        assert by_path(modules)[str(case.exe)].status == "ok"


def test_a_rebuilt_executable_is_a_mismatch(null_thread, rebuilt_exe):
    case, notes = null_thread
    table = by_path(module_table(notes, executable=str(rebuilt_exe)))
    exe = table[str(case.exe)]
    assert exe.local_path == str(rebuilt_exe)
    assert exe.status == "mismatch"
    assert exe.local_build_id == elf_build_id(rebuilt_exe) != exe.build_id
    assert all(m.status == "ok" for p, m in table.items() if p != str(case.exe))


def test_sysroot_is_searched_instead_of_the_host(null_thread, rebuilt_exe, tmp_path):
    case, notes = null_thread
    sysroot = tmp_path / "sysroot"
    placed = sysroot / str(case.exe).lstrip("/")
    placed.parent.mkdir(parents=True)
    shutil.copyfile(rebuilt_exe, placed)
    table = by_path(module_table(notes, sysroot=str(sysroot)))
    assert table[str(case.exe)].local_path == str(placed)
    assert table[str(case.exe)].status == "mismatch"
    libc = next(m for p, m in table.items() if os.path.basename(p) == "libc.so.6")
    assert (libc.status, libc.local_path) == ("missing", None)
    # The real libc placed under the sysroot is found there and matches.
    libc_copy = sysroot / libc.path.lstrip("/")
    libc_copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(libc.path, libc_copy)
    table = by_path(module_table(notes, sysroot=str(sysroot)))
    assert (table[libc.path].status, table[libc.path].local_path) == ("ok", str(libc_copy))


def test_build_id_cache_follows_a_file_copied_over(null_thread, rebuilt_exe, tmp_path):
    case, _ = null_thread
    target = tmp_path / "prog"
    shutil.copyfile(case.exe, target)
    first = elf_build_id(target)
    assert first == elf_build_id(case.exe)
    shutil.copyfile(rebuilt_exe, target)
    os.utime(target, ns=(1, 1))  # a different mtime even on a coarse clock
    assert elf_build_id(target) == elf_build_id(rebuilt_exe) != first


def test_elf_build_id_of_files_without_one(tmp_path):
    text = tmp_path / "text"
    text.write_text("plain\n")
    assert elf_build_id(text) is None
    assert elf_build_id(tmp_path / "missing") is None
    assert elf_build_id(tmp_path) is None
    gcc = require("gcc")
    no_id = tmp_path / "no_build_id"
    subprocess.run([gcc, "-o", str(no_id), str(CRASHERS / "ud2.c"), "-Wl,--build-id=none"], check=True, capture_output=True)
    assert elf_build_id(no_id) is None
    bad = tmp_path / "bad.so"
    bad.write_bytes(b"\x7fELF" + b"\xff" * 60)
    assert elf_build_id(bad) is None


DELETES_ITSELF = r"""
#include <unistd.h>
/* Removes its own executable, then faults: the core maps "<path> (deleted)". */
int main(int argc, char **argv) {
    (void)argc;
    unlink(argv[0]);
    *(volatile int *)0 = 1;
    return 0;
}
"""


def test_a_deleted_executable_is_missing(tmp_path):
    source = tmp_path / "deletes_itself.c"
    source.write_text(DELETES_ITSELF)
    exe = compile_c(source, tmp_path / "deletes_itself")
    original_build_id = elf_build_id(exe)
    case = run_to_core("deletes_itself", [str(exe)], tmp_path / "run")
    with read_core(case.core) as notes:
        modules = module_table(notes)
        deleted = next(m for m in modules if m.path == f"{exe} (deleted)")
        assert deleted.status == "missing" and deleted.local_path is None
        # The build-id is still known from the core's memory.
        assert deleted.build_id == original_build_id is not None
        assert notes.executable == deleted.path


@pytest.fixture(scope="module")
def no_build_id_case(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("no_build_id")
    exe = compile_c(CRASHERS / "ud2.c", workdir / "ud2_no_id", ("-Wl,--build-id=none",))
    rebuilt = compile_c(
        CRASHERS / "ud2.c", workdir / "ud2_no_id_rebuilt", ("-Wl,--build-id=none", "-Dunreachable_path=unreachable_path_v2")
    )
    return run_to_core("no_build_id", [str(exe)], workdir / "run"), rebuilt


def test_files_without_build_id_are_told_apart_by_their_headers(no_build_id_case):
    case, rebuilt = no_build_id_case
    with read_core(case.core) as notes:
        assert str(case.exe) not in notes.build_ids
        same = by_path(module_table(notes))[str(case.exe)]
        assert (same.status, same.build_id, same.local_build_id) == ("no-build-id", None, None)
        other = by_path(module_table(notes, executable=str(rebuilt)))[str(case.exe)]
        assert other.status == "mismatch"


def test_a_first_page_of_zeros_is_no_header_the_local_file_decides(null_thread, tmp_path):
    """A core whose file-backed pages were zero-filled to shrink it (as the shared GPU cores'
    vendor libraries were): the library's header reads as zeros, which the loader never writes;
    the library stays in the table, its local file standing for it."""
    from elftools.elf.elffile import ELFFile

    case, notes = null_thread
    libc = next(m for m in notes.mappings if os.path.basename(m.path) == "libc.so.6" and m.file_offset == 0)
    copy = tmp_path / "core.zeroed"
    shutil.copyfile(case.core, copy)
    with open(copy, "r+b") as f:
        segment = next(
            s for s in ELFFile(f).iter_segments()
            if s["p_type"] == "PT_LOAD" and s["p_vaddr"] <= libc.start < s["p_vaddr"] + s["p_filesz"]
        )  # fmt: skip
        f.seek(segment["p_offset"] + libc.start - segment["p_vaddr"])
        f.write(b"\0" * 4096)
    with read_core(str(copy)) as zeroed:
        assert zeroed.memory.read(libc.start, 4) == b"\0\0\0\0"
        row = by_path(module_table(zeroed)).get(libc.path)
    assert row is not None and row.local_path == libc.path and row.status.trusted_image
