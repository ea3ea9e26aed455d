"""What is kept of gdb's frames for a program's pcs (coreanalyze.gdb.programframes): the matching
of a listing without the program's debug file with gdb's listing with it, and the cache file.
The whole path runs on real cores in tests/integration/test_newer_pythons.py."""

from __future__ import annotations

import json

from coreanalyze.gdb.programframes import CACHE_PART, KnownFrames, ProgramFrames, RecordingSession
from coreanalyze.unwind.debugger import DebuggerFrame

START, END = 0x400000, 0x800000


def frame(pc: int, function: str | None, line: int | None = None, library: str | None = None) -> DebuggerFrame:
    return DebuggerFrame(pc, function, "a.c" if line else None, line, library)


def kept(physical: list[DebuggerFrame], listed: list[DebuggerFrame], truncated: bool = False) -> dict:
    use = ProgramFrames(START, END, KnownFrames("ab" * 20))
    RecordingSession(None, use)._keep(physical, listed, truncated)
    return use.known.frames


LIBC = "/lib/libc.so.6"
PHYSICAL = [frame(0x7F0000001000, "memcpy", library=LIBC), frame(0x401000, "outer"), frame(0x7F0000002000, "start", library=LIBC)]


def test_inlined_calls_are_kept_with_the_frame_beside_them():
    listed = [PHYSICAL[0], frame(0x401000, "inlined", 10), frame(0x401000, "outer", 20), PHYSICAL[2]]
    assert kept(PHYSICAL, listed) == {
        "libc.so.6:memcpy>+1000:0": [["inlined", "a.c", 10, None], ["outer", "a.c", 20, None]],
        "+1000>libc.so.6:start:0": [],  # nothing listed between the program's frame and the next
    }


def test_nothing_is_kept_past_a_frame_only_the_debug_info_lists():
    tail_call = frame(0x402000, "tail_called", 5)
    listed = [PHYSICAL[0], frame(0x401000, "outer", 20), tail_call, PHYSICAL[2]]
    assert kept(PHYSICAL, listed) == {"libc.so.6:memcpy>+1000:0": [["outer", "a.c", 20, None]]}


def test_a_run_cut_by_the_listings_end_is_not_kept():
    listed = [PHYSICAL[0], frame(0x401000, "inlined", 10)]
    assert kept(PHYSICAL[:2], listed, truncated=True) == {}
    assert kept(PHYSICAL[:2], listed, truncated=False) == {"libc.so.6:memcpy>+1000:0": [["inlined", "a.c", 10, None]]}


def test_recursion_through_one_call_is_not_kept():
    physical = [PHYSICAL[0], frame(0x401000, "f"), frame(0x401000, "f")]
    assert kept(physical, [PHYSICAL[0], frame(0x401000, "f", 3), frame(0x401000, "f", 3)]) == {}


def test_the_cache_file_round_trips_and_a_damaged_one_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("COREANALYZE_CACHE_DIR", str(tmp_path))
    known = KnownFrames("cd" * 20)
    known.add(known.frames, "-:+10:1", [["f", "a.c", 3, None]])
    known.add(known.instructions, "400000:400010:16", ["mov %rax,%rbx", "f", 16])
    known.save()
    again = KnownFrames.load("cd" * 20)
    assert (again.frames, again.instructions) == (known.frames, known.instructions)
    path = tmp_path / CACHE_PART / f"{'cd' * 20}.json"
    damaged = {
        "frames": {"good": [["f", None, None, None]], "bad": [["f", 3]], "worse": "x"},
        "instructions": {"good": ["nop", None, None], "bad": [1, 2, 3]},
    }
    path.write_text(json.dumps(damaged))
    again = KnownFrames.load("cd" * 20)
    assert (again.frames, again.instructions) == ({"good": [["f", None, None, None]]}, {"good": ["nop", None, None]})
    path.write_text("{not json")
    assert KnownFrames.load("cd" * 20).frames == {}
