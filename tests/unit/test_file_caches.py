"""Answers kept per file for the next core of a batch: served again only while the files are
the same, and bounded."""

from __future__ import annotations

import json
import os
from array import array

from coreanalyze.base.filecache import BoundedCache, file_identity
from coreanalyze.gdb.libcopies.copies import ORDER, ORDER_META, load_order


def _write_order(entry, order, lowest):
    (entry / ORDER).write_bytes(array("I", order).tobytes())
    (entry / ORDER_META).write_text(json.dumps({"count": len(order), "lowest": lowest, "lowest_sized": lowest}))


def test_a_symbol_order_is_read_once_and_again_when_rewritten(tmp_path):
    _write_order(tmp_path, [2, 0, 1], {"1": 16})
    first = load_order(str(tmp_path))
    assert list(first.order) == [2, 0, 1] and first.lowest == {1: 16}
    assert load_order(str(tmp_path)) is first
    for name in (ORDER, ORDER_META):  # rewritten in place, same size: only the time differs
        os.utime(tmp_path / name, ns=(1, 1))
    _write_order(tmp_path, [1, 2, 0], {"1": 32})
    again = load_order(str(tmp_path))
    assert again is not first and list(again.order) == [1, 2, 0] and again.lowest == {1: 32}


def test_a_symbol_order_that_does_not_match_its_count_is_none(tmp_path):
    (tmp_path / ORDER).write_bytes(array("I", [0, 1]).tobytes())
    (tmp_path / ORDER_META).write_text(json.dumps({"count": 3, "lowest": {}, "lowest_sized": {}}))
    assert load_order(str(tmp_path)) is None
    assert load_order(str(tmp_path / "absent")) is None


def test_bounded_cache_keeps_the_most_recently_used():
    cache: BoundedCache[int, str] = BoundedCache(2)
    calls = []

    def compute(key):
        calls.append(key)
        return str(key)

    for key in (1, 2, 1, 3, 1, 2):
        assert cache.get(key, lambda key=key: compute(key)) == str(key)
    assert calls == [1, 2, 3, 2]  # 2 was the least recently used when 3 came


def test_file_identity_changes_with_the_file(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"a")
    before = file_identity(path)
    path.write_bytes(b"ab")
    assert file_identity(path) != before
    assert file_identity(tmp_path / "absent") is None
