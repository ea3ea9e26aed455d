"""A --sysroot resolves the core's names as the crashed machine's loader did: the real GPU core
of ../shared/data/gpu with its sysroot, intact and as a copy without the top-level merged-/usr
links (`lib -> usr/lib`, `lib64 -> usr/lib64`), gives the same stacks, and they go past the
first frame."""

from __future__ import annotations

import os
import shutil

import pytest
from support.clirun import analyze_json, crashed_thread


def _frames(report: dict) -> dict[int, list[tuple]]:
    return {t["tid"]: [(f["pc"], f["function"], f["module"]) for f in t["frames"]] for t in report["threads"]}


@pytest.fixture(scope="module")
def sysroots(gpu_crash, tmp_path_factory):
    intact = gpu_crash.sysroot
    assert os.path.islink(intact / "lib") and os.readlink(intact / "lib") == "usr/lib"
    bare = tmp_path_factory.mktemp("bare-sysroot") / "root"
    # The same files (hard links: no copy of the bytes), without the top-level links.
    shutil.copytree(intact / "usr", bare / "usr", symlinks=True, copy_function=os.link)
    assert not os.path.lexists(bare / "lib") and not os.path.lexists(bare / "lib64")
    return intact, bare


def test_stacks_do_not_stop_without_the_merged_usr_links(gpu_crash, sysroots, tmp_path):
    intact, bare = sysroots
    with_links = analyze_json(gpu_crash.core, "--sysroot", str(intact), cwd=tmp_path)
    without = analyze_json(gpu_crash.core, "--sysroot", str(bare), cwd=tmp_path)
    crashed = crashed_thread(without)
    native = [f for f in crashed["frames"] if f["kind"] == "native"]
    assert len(native) > 5, native
    # The abort path through libc into the driver that aborted the process.
    assert any(f["function"] == "abort" for f in native) and any("libcuda" in (f["module"] or "") for f in native)
    assert _frames(without) == _frames(with_links)
    assert without["classification"]["signature"] == with_links["classification"]["signature"]
    assert without["classification"]["category"] == "gpu-driver"
    statuses = {m["path"]: m["status"] for m in without["modules"]}
    assert statuses["/usr/lib/x86_64-linux-gnu/libc.so.6"] == "ok"
    assert statuses == {m["path"]: m["status"] for m in with_links["modules"]}
