"""CoreMemory.find: a needle found everywhere in a segment's bytes, across the windows the search
maps one after another, and only within what the segment holds."""

from __future__ import annotations

import mmap

import pytest

from coreanalyze.corefile import memory
from coreanalyze.corefile.memory import PF_R, PF_W, CoreMemory, Segment


@pytest.mark.parametrize("search", ["memmem", "mmap.find"])
def test_every_occurrence_is_found_once_across_windows(tmp_path, monkeypatch, search):
    monkeypatch.setattr(memory, "SEARCH_WINDOW", mmap.PAGESIZE)
    if search == "memmem":
        assert memory._libc_memmem() is not None  # this system's libc has it: the path taken
    else:
        monkeypatch.setattr(memory, "_libc_memmem", lambda: None)  # a system without it
    body = bytearray(b"." * (5 * mmap.PAGESIZE))
    needle = b"numpy-2.1.dist-info"
    places = [0, 100, mmap.PAGESIZE - 5, 2 * mmap.PAGESIZE - len(needle), 3 * mmap.PAGESIZE + 1, len(body) - len(needle)]
    for at in places:
        body[at : at + len(needle)] = needle
    path = tmp_path / "core"
    path.write_bytes(bytes(64) + bytes(body))
    base = 0x7F0000000000
    segment = Segment(base, base + len(body) + 4096, 64, len(body), PF_R | PF_W)  # the last page not dumped
    with CoreMemory(str(path), [segment]) as mem:
        assert list(mem.find(needle, segment, 1 << 30)) == [base + p for p in places]
        assert list(mem.find(needle, segment, 2 * mmap.PAGESIZE)) == [base + p for p in places[:4]]
        assert list(mem.find(b"absent", segment, 1 << 30)) == []


def test_the_holes_of_a_sparse_core_are_skipped_and_nothing_around_them_is_missed(tmp_path):
    needle = b"numpy-2.1.dist-info"
    page = mmap.PAGESIZE
    path = tmp_path / "sparse-core"
    with open(path, "wb") as f:  # data, a 64-page hole, data: as the kernel writes untouched pages
        f.write(b"." * (page - 7) + needle[:7])
        f.seek(page + 64 * page)
        f.write(needle + b"." * (page - len(needle)))
    base = 0x7F0000000000
    size = 66 * page
    segment = Segment(base, base + size, 0, size, PF_R | PF_W)
    with CoreMemory(str(path), [segment]) as mem:
        assert list(mem.find(needle, segment, size)) == [base + 65 * page]
        assert list(mem._data_extents(0, size)) in ([(0, page), (65 * page, size)], [(0, size)])
