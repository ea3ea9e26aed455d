"""Uncompressed copies of compressed debug files (coreanalyze.symbols.uncompressed): the copy
holds every section's bytes as binutils would uncompress them (zlib and zstd), real gdb reads
the same lines from it, and a file it cannot copy gets no copy."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from support.coregen import compile_c
from support.require import require

from coreanalyze.symbols.uncompressed import SHF_COMPRESSED, Budget, plan, uncompressed_copy

BUILD_ID = "ab" * 20
SOURCE = """
#include <stdio.h>
static int twice(int x) { return 2 * x; }
int main(int argc, char **argv) {
    (void)argv;
    printf("%d\\n", twice(argc));
    return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("uncompressed")
    source = work / "twice.c"
    source.write_text(SOURCE)
    return compile_c(source, work / "twice")


def _compressed(program: Path, kind: str, out: Path) -> Path:
    subprocess.run([require("objcopy"), f"--compress-debug-sections={kind}", str(program), str(out)], check=True, capture_output=True)
    return out


def _sections(path: Path) -> dict[str, tuple[int, bytes]]:
    with open(path, "rb") as f:
        elf = ELFFile(f)
        return {s.name: (s["sh_flags"], s.data()) for s in elf.iter_sections() if s["sh_type"] != "SHT_NOBITS"}


def _lines(path: Path) -> str:
    run = subprocess.run([require("gdb"), "-nx", "-batch", "-ex", "info line twice", "-ex", "info scope main", str(path)], capture_output=True, text=True, timeout=60)
    return run.stdout


@pytest.mark.parametrize("kind", ["zlib", "zstd"])
def test_the_copy_holds_the_sections_binutils_uncompresses(program, tmp_path, kind):
    compressed = _compressed(program, kind, tmp_path / f"twice.{kind}")
    with open(compressed, "rb") as f:
        assert any(s["sh_flags"] & SHF_COMPRESSED for s in ELFFile(f).iter_sections())
    reference = tmp_path / "reference"
    subprocess.run([require("objcopy"), "--decompress-debug-sections", str(compressed), str(reference)], check=True, capture_output=True)

    copy = uncompressed_copy(str(compressed), BUILD_ID, Budget(), tmp_path / "cache")
    assert copy == str(tmp_path / "cache" / ".build-id" / BUILD_ID[:2] / (BUILD_ID[2:] + ".debug"))
    got, want = _sections(Path(copy)), _sections(reference)
    assert set(got) == set(want)
    for name, (flags, data) in want.items():
        assert got[name][1] == data, name
        assert not got[name][0] & SHF_COMPRESSED, name
    assert _lines(Path(copy)) == _lines(compressed) == _lines(program)
    assert "twice.c" in _lines(program)
    # Made once: a second call finds it.
    assert uncompressed_copy(str(compressed), BUILD_ID, Budget(0), tmp_path / "cache") == copy


def test_no_copy_without_compressed_sections_within_the_budget_or_of_a_damaged_file(program, tmp_path):
    root = tmp_path / "cache"
    assert uncompressed_copy(str(program), BUILD_ID, Budget(), root) is None  # nothing compressed
    compressed = _compressed(program, "zlib", tmp_path / "twice.zlib")
    assert uncompressed_copy(str(compressed), BUILD_ID, Budget(1024), root) is None  # over the budget
    text = tmp_path / "notes.txt"
    text.write_text("not an ELF file")
    assert uncompressed_copy(str(text), BUILD_ID, Budget(), root) is None
    damaged = bytearray(compressed.read_bytes())
    with open(compressed, "rb") as f:
        info = ELFFile(f).get_section_by_name(".debug_info")
        start = info["sh_offset"] + 24  # inside the zlib stream, past the compression header
    damaged[start : start + 64] = bytes(64)
    (tmp_path / "damaged").write_bytes(damaged)
    assert uncompressed_copy(str(tmp_path / "damaged"), BUILD_ID, Budget(), root) is None
    assert not root.exists() or not any(p.is_file() for p in root.rglob("*"))


def test_the_plan_names_the_debug_files_gdb_reads_without_a_copy(tmp_path, monkeypatch):
    from coreanalyze.base import model
    from coreanalyze.base.vocabulary import ModuleStatus
    from coreanalyze.symbols import gdb_debug_files

    monkeypatch.setenv("COREANALYZE_CACHE_DIR", str(tmp_path))
    read = model.Module("/lib/libread.so", build_id="11" * 20, status=ModuleStatus.OK)
    skipped = model.Module("/lib/libskipped.so", build_id="22" * 20, status=ModuleStatus.OK)
    other_build = model.Module("/lib/libother.so", build_id="33" * 20, status=ModuleStatus.MISMATCH)
    debug = {read.path: "/debug/read.debug", skipped.path: "/debug/skipped.debug", other_build.path: "/debug/other.debug"}

    def debug_files(modules):
        return gdb_debug_files(modules, lambda m: debug[m.path])

    found, missing = plan(debug_files([read, skipped, other_build]), lambda m: m is not skipped)
    assert (found, missing) == (False, [("/debug/read.debug", "11" * 20)])
    copy = tmp_path / "debug-uncompressed-v1" / ".build-id" / "11" / ("11" * 19 + ".debug")
    copy.parent.mkdir(parents=True)
    copy.write_bytes(b"")
    assert plan(debug_files([read, skipped]), lambda m: True) == (True, [("/debug/skipped.debug", "22" * 20)])
