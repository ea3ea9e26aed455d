"""The user cache's cap: least recently used entries go first, entries in use stay, and
`coreanalyze cache info` / `clear` show and empty it."""

from __future__ import annotations

import os
import time

from click.testing import CliRunner

from coreanalyze.base import cachesize
from coreanalyze.cli import cli

MIB = 1 << 20


def _entry(path, size: int, age: float) -> None:
    """A cache entry of `size` bytes last used `age` seconds ago (a directory with one file)."""
    path.mkdir(parents=True)
    (path / "data").write_bytes(os.urandom(size))
    used = time.time() - age
    for p in (path / "data", path):
        os.utime(p, (used, used))


def test_trim_removes_the_least_recently_used_first_and_keeps_those_in_use(tmp_path):
    root = tmp_path / "cache"
    _entry(root / "libsymbols-v1" / "ab" / "oldest", MIB, 3 * 86400)
    _entry(root / "libsymbols-v1" / "cd" / "older", MIB, 2 * 86400)
    _entry(root / "index-v1" / "ef" / "recent", MIB, 86400)
    _entry(root / "images" / "asked-for", MIB, 9 * 86400)  # an image given as --sysroot: kept
    stray = root / "stray.json"  # a file at the top, used just now
    stray.write_bytes(os.urandom(MIB))
    os.utime(stray, (time.time() - 10, time.time() - 10))
    assert {e.part for e in cachesize.entries(root)} == {"libsymbols-v1", "index-v1", "images", ""}
    removed = cachesize.trim(root, limit=int(2.5 * MIB))
    assert removed >= 2 * MIB
    left = {os.path.basename(e.path) for e in cachesize.entries(root)}
    assert left == {"recent", "stray.json", "asked-for"}
    # Over the cap, but everything left is in use or needed to get under it: nothing more goes.
    assert cachesize.trim(root, limit=0, now=time.time()) >= MIB  # the day-old entry
    assert {os.path.basename(e.path) for e in cachesize.entries(root)} == {"stray.json", "asked-for"}


def test_the_cap_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(cachesize.LIMIT_VARIABLE, "150")
    assert cachesize.limit_bytes() == 150 * MIB
    monkeypatch.setenv(cachesize.LIMIT_VARIABLE, "lots")
    assert cachesize.limit_bytes() == cachesize.DEFAULT_LIMIT_MB * MIB


def test_cache_info_and_clear_commands(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("COREANALYZE_CACHE_DIR", str(root))
    _entry(root / "libsymbols-v1" / "ab" / "entry", 2 * MIB, 0)
    runner = CliRunner()
    info = runner.invoke(cli, ["cache", "info"])
    assert info.exit_code == 0
    assert str(root) in info.output and "libsymbols-v1" in info.output and "2.0 MiB" in info.output
    cleared = runner.invoke(cli, ["cache", "clear"])
    assert cleared.exit_code == 0 and "removed 2.0 MiB" in cleared.output
    assert cachesize.entries(root) == []
    assert "0.0 MiB in 0 entries" in runner.invoke(cli, ["cache", "info"]).output


def test_trims_after_analyses_keep_no_finished_threads(tmp_path, monkeypatch):
    """A long-lived watch trims after every core: one trim at a time, and finished ones are not
    kept (each analysis would otherwise leave a thread object behind)."""
    monkeypatch.setenv("COREANALYZE_CACHE_DIR", str(tmp_path / "cache"))
    for _ in range(20):
        cachesize.trim_later()
        assert len(cachesize._trimming) <= 1
        for thread in list(cachesize._trimming):
            thread.join()  # finished, still listed until the next trim_later
    cachesize.trim_later()
    assert len(cachesize._trimming) == 1
    cachesize.wait()
    assert cachesize._trimming == []
