"""Facts about files kept on disk between runs (coreanalyze.base.filefacts through PerFileCache): a
later process gets them without reading the file; a file changed, a store damaged or holding
values of the wrong shape, or the store turned off all mean the file is read again."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from coreanalyze.base import filefacts
from coreanalyze.base.filecache import PerFileCache
from coreanalyze.base.filefacts import optional_str, optional_str_list
from coreanalyze.corefile.modules import _read_build_id
from coreanalyze.symbols.locate import DebugLink, _link_as_fact, _link_from_fact


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("COREANALYZE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("COREANALYZE_FILE_FACTS", raising=False)
    return tmp_path / "cache"


def _first_process(path: str, value) -> None:
    reads = []
    first = PerFileCache("words", decode=optional_str_list)
    assert first.get(path, lambda p: reads.append(p) or value) == value
    assert reads == [path]
    filefacts.save_all()  # as at the process's exit


def _never(path: str):
    raise AssertionError(f"{path} was read again")


def test_a_later_process_gets_the_fact_without_reading_the_file(cache, tmp_path):
    library = tmp_path / "libx.so"
    library.write_bytes(b"ELF or not")
    _first_process(str(library), ["libc.so.6", "libm.so.6"])
    assert (cache / filefacts.FORMAT / "words.json").is_file()
    later = PerFileCache("words", decode=optional_str_list)
    assert later.get(str(library), _never) == ["libc.so.6", "libm.so.6"]


def test_a_file_changed_since_is_read_again(cache, tmp_path):
    library = tmp_path / "libx.so"
    library.write_bytes(b"version 1")
    _first_process(str(library), ["old"])
    library.write_bytes(b"version 2, longer")
    later = PerFileCache("words", decode=optional_str_list)
    assert later.get(str(library), lambda p: ["new"]) == ["new"]


def test_a_damaged_store_or_a_value_of_the_wrong_shape_means_reading_the_file(cache, tmp_path):
    library = tmp_path / "libx.so"
    library.write_bytes(b"x")
    _first_process(str(library), ["kept"])
    store = cache / filefacts.FORMAT / "words.json"
    facts = json.loads(store.read_text())["facts"]
    store.write_text(json.dumps({"format": filefacts.FORMAT, "facts": {key: {"not": "a list"} for key in facts}}))
    assert PerFileCache("words", decode=optional_str_list).get(str(library), lambda p: ["read"]) == ["read"]
    filefacts.save_all()
    assert PerFileCache("words", decode=optional_str_list).get(str(library), _never) == ["read"]
    store.write_text("{ not json")
    assert PerFileCache("words", decode=optional_str_list).get(str(library), lambda p: ["read again"]) == ["read again"]
    filefacts.save_all()  # what was read replaces the damaged store
    assert PerFileCache("words", decode=optional_str_list).get(str(library), _never) == ["read again"]


def test_the_store_can_be_turned_off(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("COREANALYZE_FILE_FACTS", "0")
    library = tmp_path / "libx.so"
    library.write_bytes(b"x")
    _first_process(str(library), ["not kept"])
    assert not (cache / filefacts.FORMAT).exists()


def test_an_unwritable_cache_is_no_error(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("COREANALYZE_CACHE_DIR", str(blocker / "cache"))  # under a file: cannot exist
    library = tmp_path / "libx.so"
    library.write_bytes(b"x")
    _first_process(str(library), ["fine"])


def test_the_kept_kinds_round_trip_real_answers(cache):
    program = os.path.realpath(sys.executable)
    build_id = _read_build_id(program)
    assert build_id is not None
    PerFileCache("ids", decode=optional_str).get(program, lambda p: build_id)
    filefacts.save_all()
    assert PerFileCache("ids", decode=optional_str).get(program, _never) == build_id
    link = DebugLink("libc.so.6.debug", 0x1234ABCD)
    assert _link_from_fact(json.loads(json.dumps(_link_as_fact(link)))) == link
    assert _link_from_fact(None) is None
    with pytest.raises(TypeError):
        _link_from_fact(["name", "not a crc"])
