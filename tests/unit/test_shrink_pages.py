"""The bookkeeping of `coreanalyze shrink`: kept grains, their runs, the marker note."""

from __future__ import annotations

from coreanalyze.base import model
from coreanalyze.corefile import elfcore
from coreanalyze.corefile import shrunk as marker
from coreanalyze.shrink.pages import PageSet


def test_runs_are_grains_clipped_to_the_segment_and_merged_when_adjacent():
    kept = PageSet(512)
    kept.add(0x1010, 8, "a")  # one grain
    kept.add(0x1200, 0x300, "b")  # the next two grains
    kept.add(0x5000, 1, "c")
    assert kept.runs_within(0x1000, 0x6000) == [(0x1000, 0x1600), (0x5000, 0x5200)]
    assert kept.runs_within(0x1100, 0x1300) == [(0x1100, 0x1300)]
    assert kept.runs_within(0x2000, 0x5000) == []
    assert kept.reasons == {"a": 512, "b": 1024, "c": 512}


def test_coarsened_runs_cover_what_the_fine_ones_did():
    kept = PageSet(512)
    for address in (0x1000, 0x1800, 0x3200):
        kept.add(address, 1, "x")
    coarse = kept.coarsened(4096)
    assert coarse.runs_within(0, 0x10000) == [(0x1000, 0x2000), (0x3000, 0x4000)]
    for lo, hi in kept.runs_within(0, 0x10000):
        assert any(c_lo <= lo and hi <= c_hi for c_lo, c_hi in coarse.runs_within(0, 0x10000))


def test_a_hostile_size_or_address_adds_nothing():
    kept = PageSet(512)
    kept.add(-5, 100, "x")
    kept.add(0x1000, 0, "x")
    kept.add(0x1000, -1, "x")
    assert kept.pages == set()


def test_marker_note_round_trips_and_is_replaced_not_repeated():
    info = model.ShrunkCore(original_size=123456, redacted=["environment values"])
    note = marker.marker_note("<", info)
    other = elfcore.note("<", b"CORE", 1, b"\x01" * 10)
    notes = list(elfcore.iter_notes("<", other + note))
    assert [(n[0], n[1]) for n in notes] == [(b"CORE", 1), (marker.NOTE_NAME, marker.NT_SHRUNK)]
    assert marker._from_desc(notes[1][2]) == info
    assert marker.without_marker("<", other + note) == other


def test_marker_from_hostile_json_is_none_or_bounded():
    assert marker._from_desc(b"not json") is None
    assert marker._from_desc(b'{"format": "other"}') is None
    odd = marker._from_desc(b'{"format": "coreanalyze-shrunk/1", "original_size": -4, "redacted": "x"}')
    assert odd == model.ShrunkCore(original_size=None, redacted=[])


def test_a_shrunk_core_reads_back_from_json_as_the_model():
    report = model.report_from_dict({"core": {"path": "small.core", "shrunk": {"original_size": 5, "redacted": ["x"]}}})
    assert report.core.shrunk == model.ShrunkCore(original_size=5, redacted=["x"])


def test_redaction_blanks_what_the_written_file_holds_even_across_runs(tmp_path):
    """A `NAME=value` that crosses from one run of kept memory into the next (two mappings that
    meet) is blanked: the search is over the file's bytes, as a reader of it would find them."""
    from coreanalyze.shrink.redact import Needles, blank_written
    from coreanalyze.shrink.writer import WrittenRun

    first = b"\x11" * 20 + b"MASTER_AD"
    second = b"DR=10.0.0.9\0" + b"\0prog\0--secret\0" + b"\x22" * 8
    path = tmp_path / "written.core"
    path.write_bytes(b"HDR" + first + second + b"\0--secret\0")
    runs = [WrittenRun(3, 0x1000, len(first)), WrittenRun(3 + len(first), 0x1000 + len(first), len(second))]
    found = Needles([(b"MASTER_ADDR=10.0.0.9", 12)], [(b"\0--secret\0", 1)], (0x1000, 0x1000 + len(first) + len(second)))
    blank_written(str(path), runs, found)
    data = path.read_bytes()
    assert b"10.0.0.9" not in data and b"MASTER_ADDR=\0\0\0\0\0\0\0\0\0" in data  # the name stays
    # Arguments only in the initial stack's runs: the same text elsewhere is not theirs.
    assert data.count(b"--secret") == 1 and data.endswith(b"\0--secret\0")
