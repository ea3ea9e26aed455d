"""--sysroot IMAGE: a real crash analyzed with the container image it ran in.

The images are built here in the layouts `docker save` (before and from Docker 25) and OCI
tools write, from the real files of a real crash: the crasher's executable and the C library
and loader it ran with, placed in layers under the paths the core names, with the usual
merged-/usr symlinks (absolute ones too). A decoy C library in the first layer is replaced by
the real one in a later layer; decoy debug files with the wrong build-ids are removed by a
whiteout and an opaque directory in later layers. The report read from the image must name
the same frames and lines as the report read from this machine's own files, and say which
layer each file came from.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from support.clirun import analyze_json, crashed_thread, run_cli
from support.images import docker_save, oci_layout
from support.require import require

from coreanalyze.base.model import report_from_dict
from coreanalyze.image import image_cache
from coreanalyze.render import render

CRASH = "null_thread"
TAG = "crasher:1"


def _host_symlinks() -> list[tuple]:
    """The merged-/usr symlinks of this machine, as an image of it has them."""
    out = []
    for path in ("/lib", "/lib64", "/bin", "/sbin", "/lib64/ld-linux-x86-64.so.2"):
        if os.path.islink(path):
            out.append(("symlink", path, os.readlink(path)))
    return out


def _debug_path(build_id: str) -> str:
    return f"/usr/lib/debug/.build-id/{build_id[:2]}/{build_id[2:]}.debug"


def _split_debug(exe: str, workdir: Path) -> tuple[Path, Path]:
    """The executable without its DWARF (and a .gnu_debuglink), and its separate debug file."""
    objcopy = require("objcopy")
    debug, stripped = workdir / f"{CRASH}.debug", workdir / f"{CRASH}.stripped"
    subprocess.run([objcopy, "--only-keep-debug", exe, str(debug)], check=True)
    subprocess.run([objcopy, "--strip-debug", f"--add-gnu-debuglink={debug}", exe, str(stripped)], check=True)
    return stripped, debug


@pytest.fixture(scope="module")
def crash(cores, tmp_path_factory):
    case = cores.c_crash(CRASH)
    local = analyze_json(case.core)
    modules = {m["path"]: m for m in local["modules"]}
    libc = next(p for p in modules if os.path.basename(p).startswith("libc.so"))
    loader = next(p for p in modules if os.path.basename(p).startswith("ld-linux"))
    exe = next(p for p in modules if os.path.basename(p) == CRASH)
    # Names and lines of the executable then come only from the debug file the image holds.
    stripped, debug = _split_debug(exe, tmp_path_factory.mktemp("split"))
    decoy = Path(loader).read_bytes()  # an ELF file with another build-id
    base = [*_host_symlinks(), *[("file", p, Path(p)) for p in modules if p not in (libc, exe)]]
    base += [("file", exe, stripped), ("file", libc, decoy)]
    base += [("file", _debug_path(modules[exe]["build_id"]), decoy), ("file", _debug_path(modules[libc]["build_id"]), decoy)]
    layers = [
        base,
        [("file", libc, Path(libc)), ("whiteout", _debug_path(modules[exe]["build_id"]))],
        [
            ("opaque", os.path.dirname(_debug_path(modules[libc]["build_id"]))),
            ("file", f"/usr/lib/debug{os.path.dirname(exe)}/{debug.name}", debug),  # where its debuglink leads
            ("file", "/etc/motd", b"layer three\n"),
        ],
    ]
    return case, local, layers, {"libc": libc, "exe": exe, "loader": loader}


def _frames(report: dict) -> list[tuple]:
    return [(f["kind"], f["function"], f["file"], f["line"]) for f in crashed_thread(report)["frames"]]


def _image(kind: str, directory: Path, layers) -> Path:
    if kind == "docker-save":
        return docker_save(directory / "crasher.tar", layers, TAG)
    if kind == "docker-save-oci":
        return docker_save(directory / "crasher.tar", layers, TAG, oci_inside=True)
    try:
        import zstandard  # noqa: F401
    except ImportError:
        zstd = ()
    else:
        zstd = (1,)
    return oci_layout(directory / "crasher-oci", layers, TAG, zstd_layers=zstd)


@pytest.fixture
def own_cache(tmp_path, monkeypatch) -> Path:
    """An image cache of this test alone: every file is really read out of the image's layers."""
    monkeypatch.setenv("COREANALYZE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("kind", ["docker-save", "docker-save-oci", "oci-dir"])
def test_analysis_from_an_image_is_the_local_one(crash, kind, tmp_path, own_cache):
    case, local, layers, paths = crash
    image = _image(kind, tmp_path, layers)
    report = analyze_json(case.core, "--sysroot", str(image))

    assert _frames(report) == _frames(local)
    for key in ("category", "fault_kind", "signature", "culprit"):
        assert report["classification"][key] == local["classification"][key], key
    # The decoy debug files were removed by the later layers: none was even considered.
    assert not any("debug file" in w for w in report["warnings"]), report["warnings"]
    modules = {m["path"]: m for m in report["modules"]}
    cache = image_cache().resolve()
    for path in paths.values():
        m = modules[path]
        assert m["status"] == "ok", m
        assert Path(m["local_path"]).resolve().is_relative_to(cache), m
        assert m["source"].startswith(f"image {TAG} ("), m
        assert m["origin"]["kind"] == "image" and m["origin"]["layers"] == 3
        assert m["origin"]["layer_digest"].startswith("sha256:")
    assert modules[paths["libc"]]["origin"]["layer"] == 2  # the decoy of layer 1 replaced
    assert modules[paths["exe"]]["origin"]["layer"] == 1
    assert modules[paths["exe"]]["debug_source"] == f"{modules[paths['exe']]['source'].split(',')[0]}, layer 3/3"
    # Only what the core needs was copied out of the image.
    rootfs = Path(modules[paths["exe"]]["local_path"]).parents[len(Path(paths["exe"]).parts) - 2]
    written = {"/" + str(p.relative_to(rootfs)) for p in rootfs.rglob("*") if p.is_file()}
    assert "/etc/motd" not in written
    assert [p for p in written if p.startswith("/usr/lib/debug")] == [f"/usr/lib/debug{os.path.dirname(paths['exe'])}/{CRASH}.debug"]
    # The Markdown and HTML module tables say it too.
    for fmt in ("markdown", "html"):
        assert f"image {TAG} (" in render(report_from_dict(report), fmt)


def test_one_image_in_two_layouts_shares_its_cache(crash, tmp_path, own_cache):
    """The same image saved by docker (plain layers) and as an OCI layout (compressed ones):
    one rootfs/, but each layout's layers read through their own index."""
    case, local, layers, _ = crash
    analyze_json(case.core, "--sysroot", str(_image("docker-save", tmp_path, layers)))
    (rootfs,) = image_cache().glob("*/rootfs")
    shutil.rmtree(rootfs)
    report = analyze_json(case.core, "--sysroot", str(_image("oci-dir", tmp_path, layers)))
    assert _frames(report) == _frames(local)
    assert all(m["status"] == "ok" for m in report["modules"])
    assert len(list(image_cache().glob("*/index-*.json"))) == 2


def test_a_batch_of_cores_from_one_image(crash, cores, tmp_path, own_cache):
    """Two programs of one image crash; the batch indexes the image once and both workers use it."""
    case, local, layers, paths = crash
    second = cores.c_crash("divzero")
    second_local = analyze_json(second.core)
    image = docker_save(tmp_path / "crasher.tar", [*layers, [("file", str(second.exe), second.exe)]], TAG)
    out = tmp_path / "batch"
    run = run_cli("batch", str(case.core), str(second.core), "--out", str(out), "--sysroot", str(image), "-j", "2")
    assert run.code == 0, run.stderr
    reports = {r["core"]["path"]: r for r in (json.loads(p.read_text()) for p in out.glob("reports/*.json"))}
    assert _frames(reports[str(case.core)]) == _frames(local)
    assert _frames(reports[str(second.core)]) == _frames(second_local)
    for report in reports.values():
        assert all(m["status"] == "ok" and m["source"].startswith(f"image {TAG}") for m in report["modules"]), report["modules"]
    assert len(list(image_cache().glob("*/index-*.json"))) == 1


def _hostile(tmp_path: Path, entries, tag: str = "hostile:1") -> Path:
    return docker_save(tmp_path / "hostile.tar", [entries], tag)


def _raw(name: str, kind=tarfile.REGTYPE, link: str = "", data: bytes | None = b"owned\n"):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    info.size = len(data) if data is not None and kind == tarfile.REGTYPE else 0
    return ("raw", info, data if kind == tarfile.REGTYPE else None)


@pytest.mark.parametrize(
    "entry, says",
    [
        (lambda target: _raw(f"../../../../../../../../..{target}"), "leaves the image"),
        (lambda target: _raw(target), "leaves the image"),
        (lambda target: _raw("usr/lib/x86_64-linux-gnu", tarfile.SYMTYPE, "../../../../../../../../.." + os.path.dirname(target)), "leaves the image"),
        (lambda target: _raw("usr/lib/evil", tarfile.LNKTYPE, "../../../../../../../../.." + target), "leaves the image"),
    ],
    ids=["climbing-member", "absolute-member", "climbing-symlink", "climbing-hardlink"],
)
def test_a_hostile_image_is_refused(crash, tmp_path, entry, says):
    case = crash[0]
    target = str(tmp_path / "outside" / "planted")
    image = _hostile(tmp_path, [entry(target)])
    run = run_cli(str(case.core), "--sysroot", str(image), "--format", "json", "-o", str(tmp_path / "r.json"), cwd=tmp_path)
    assert run.code == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "refused" in lines[0], run.stderr
    assert not (tmp_path / "outside").exists()
    assert not (tmp_path / "r.json").exists()


def test_a_batch_with_a_hostile_image_stops_before_any_core(crash, tmp_path):
    case = crash[0]
    image = _hostile(tmp_path, [_raw("../../../../../../../../.." + str(tmp_path / "outside" / "planted"))])
    run = run_cli("batch", str(case.core), "--out", str(tmp_path / "out"), "--sysroot", str(image))
    assert run.code == 2, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "leaves the image: refused" in run.stderr, run.stderr
    assert not (tmp_path / "outside").exists()
    assert not (tmp_path / "out" / "results").exists() or not any((tmp_path / "out" / "results").iterdir())


def test_an_absolute_symlink_is_read_inside_the_image(crash, tmp_path):
    """A symlink to a file of this machine names the image's file of that path, never ours."""
    case, _, _, paths = crash
    bait = tmp_path / "bait"
    bait.write_bytes(Path(paths["exe"]).read_bytes())
    tag = "<script>alert(1)</script>\x1b[31m:1"  # the image names itself: untrusted too
    image = _hostile(tmp_path, [("symlink", paths["exe"], str(bait)), ("file", paths["libc"], Path(paths["libc"]))], tag)
    report = analyze_json(case.core, "--sysroot", str(image))
    modules = {m["path"]: m for m in report["modules"]}
    exe = modules[paths["exe"]]
    assert exe["status"] == "missing" and exe["local_path"] is None
    assert exe["not_found"].startswith("not in the image <script>alert(1)</script>[31m:1 (")
    assert modules[paths["libc"]]["status"] == "ok"
    html = render(report_from_dict(report), "html")
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)" in html


def test_not_an_image(cores, tmp_path):
    case = cores.c_crash(CRASH)
    junk = tmp_path / "junk.tar"
    junk.write_bytes(b"this is not a tarball" * 100)
    run = run_cli(str(case.core), "--sysroot", str(junk), "--format", "json", "-o", "-")
    assert run.code == 2
    assert len(run.stderr.strip().splitlines()) == 1 and "junk.tar" in run.stderr, run.stderr
