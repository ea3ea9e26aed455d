"""`coreanalyze core.zst` (and .lz4, .xz, .gz): a real core, compressed here, analyzed as the
plain core is; the decompressed copy is removed afterwards, and a core that does not fit on the
temporary disk stops with one line."""

from __future__ import annotations

import gzip
import lzma

import pytest
from support.clirun import run_cli
from support.require import require

from coreanalyze.base.errors import BadInput
from coreanalyze.corefile.compressed import announced_size, compression_of, decompress_file


def _compress(kind: str, data: bytes) -> bytes:
    if kind == "zst":
        return require(module="zstandard").ZstdCompressor(level=1).compress(data)
    if kind == "lz4":
        return require(module="lz4.frame", what="lz4 (pip install lz4)").compress(data)
    if kind == "xz":
        return lzma.compress(data, preset=0)
    return gzip.compress(data, compresslevel=1)


def _verdict(report: dict) -> tuple:
    c = report["classification"]
    return c["fault_kind"], c["category"], c["signature"], report["core"]["signal"]["name"], report["crashing_thread"]


@pytest.fixture(scope="module")
def plain(cores):
    case = cores.c_crash("divzero")
    run = run_cli(str(case.core), "--python", str(case.exe), "--format", "json", "-o", "-")
    assert run.code == 0, run.stderr
    return case, run.json


@pytest.mark.parametrize("kind", ["zst", "lz4", "xz", "gz"])
def test_compressed_core_is_analyzed_like_the_plain_one(plain, kind, tmp_path):
    case, expected = plain
    data = case.core.read_bytes()
    packed = tmp_path / f"core.{kind}"
    packed.write_bytes(_compress(kind, data))
    assert compression_of(str(packed)) == kind
    assert announced_size(str(packed), kind) in (len(data), None)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    run = run_cli(str(packed), "--python", str(case.exe), "--format", "json", "-o", "-", env={"TMPDIR": str(scratch)})
    assert run.code == 0, run.stderr
    report = run.json
    assert _verdict(report) == _verdict(expected)
    assert report["core"]["path"] == str(packed)  # the file given, not the temporary copy
    assert [t["tid"] for t in report["threads"]] == [t["tid"] for t in expected["threads"]]
    assert not any(scratch.iterdir()), list(scratch.iterdir())  # the decompressed copy is gone


def test_a_core_that_does_not_fit_stops_with_one_line(plain, tmp_path):
    case, _ = plain
    data = case.core.read_bytes()
    for kind, packed_bytes in (("xz", lzma.compress(data, preset=0)), ("gz", gzip.compress(data, compresslevel=1))):
        packed = tmp_path / f"core.{kind}"
        packed.write_bytes(packed_bytes)
        target = tmp_path / f"plain.{kind}"
        # A disk with 1 MiB free: the announced size (xz's index, gzip's ISIZE) says at once
        # that the core does not fit, before anything is written.
        with pytest.raises(BadInput, match=r"does not fit in .*needed, .* free") as caught:
            decompress_file(str(packed), kind, str(target), free_bytes=lambda _d: 1 << 20)
        assert "\n" not in str(caught.value)
    # A stream that announces no size (zstd written without its content size) is watched while
    # it is written.
    zstandard = require(module="zstandard")
    packed = tmp_path / "core.zst"
    packed.write_bytes(zstandard.ZstdCompressor(write_content_size=False).compress(data))
    assert announced_size(str(packed), "zst") is None
    with pytest.raises(BadInput, match=r"does not fit in .*more than"):
        decompress_file(str(packed), "zst", str(tmp_path / "plain.zst"), free_bytes=lambda _d: 1 << 20)
