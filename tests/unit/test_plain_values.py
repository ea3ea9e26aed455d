"""The small conversions every report goes through: a string made safe to show (clean), the
report as JSON-ready values (to_jsonable), a module's real path (provenance)."""

from __future__ import annotations

import json
import os

from coreanalyze.base.model import Frame, Report, Thread, to_jsonable
from coreanalyze.base.vocabulary import FrameKind
from coreanalyze.render.view import clean, one_line
from coreanalyze.symbols.provenance import _realpaths


def test_a_string_with_nothing_to_escape_is_returned_as_it_is():
    for text in ("tensorflow::Buffer<float>::~Buffer", "/usr/lib/libc.so.6", "", "naïve – ünïcode"):
        assert clean(text) is text
        assert one_line(text) is text


def test_control_characters_are_escaped_and_line_breaks_kept_or_flattened():
    assert clean("a\nb\tc") == "a\nb\tc"
    assert clean("a\r\nb") == "a\nb"
    assert clean("bell\x07 esc\x1b[31m del\x7f") == "bell\\x07 esc\\x1b[31m del\\x7f"
    assert clean("evil\u202etxt.exe") == "evil\\u202etxt.exe"
    assert clean("lone\rreturn") == "lone\\x0dreturn"
    assert one_line("a\nb\tc\r\nd") == "a b c d"
    assert one_line("x\x00y\nz") == "x\\x00y z"
    assert clean("x" * 50, limit=10) == "x" * 10 + "… (40 more characters)"


def test_json_values_keep_the_contracts_order_and_shapes():
    frame = Frame(index=0, kind=FrameKind.NATIVE, pc=0x7F00DEADBEEF, function="f", line=12, inlined=True)
    report = Report(crashing_thread=7, threads=[Thread(tid=7, frames=[frame], registers={"rip": 0x401000, "cs": "0x33"})], tool_version="9")
    data = to_jsonable(report)
    assert list(data)[:2] == ["schema", "tool_version"]
    assert list(data)[2:] == [n for n in Report.__dataclass_fields__ if n not in ("schema", "tool_version")]
    thread = data["threads"][0]
    assert thread["registers"] == {"rip": "0x401000", "cs": "0x33"}
    assert thread["frames"][0]["pc"] == "0x7f00deadbeef"
    assert thread["frames"][0]["line"] == 12  # an int that is no address stays an int
    assert thread["frames"][0]["inlined"] is True
    assert thread["frames"][0]["kind"] == "native" and isinstance(thread["frames"][0]["kind"], FrameKind)
    assert to_jsonable({"address": True, "start": 16, 3: (1, 2)}, None) == {"address": True, "start": 16, "3": [1, 2]}
    assert to_jsonable(16, "address") == "0x10" and to_jsonable(True, "address") is True
    json.dumps(data)


def test_real_paths_resolve_directories_once_and_links_whole(tmp_path):
    (tmp_path / "real" / "lib").mkdir(parents=True)
    (tmp_path / "real" / "lib" / "libx.so.1").write_bytes(b"")
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "lib" / "libx.so").symlink_to("libx.so.1")
    realpath = _realpaths()
    for path in (
        tmp_path / "linked" / "lib" / "libx.so.1",
        tmp_path / "linked" / "lib" / "libx.so",
        tmp_path / "real" / "lib" / "libx.so",
        tmp_path / "linked" / "lib" / ".." / "lib" / "libx.so.1",
        tmp_path / "linked" / "missing" / "liby.so",
        tmp_path / "linked" / "lib" / "..",
    ):
        assert realpath(str(path)) == os.path.realpath(path), path
