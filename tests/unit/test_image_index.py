"""The image index on layers built here: whiteouts, opaque directories, replacement across
layers, symlinks resolved inside the image, and hostile members refused."""

from __future__ import annotations

import gzip
import tarfile

import pytest
from support.images import docker_save, oci_layout, unpack

from coreanalyze.image.errors import ImageError
from coreanalyze.image.extract import extract
from coreanalyze.image.index import ImageIndex
from coreanalyze.image.manifest import read_manifest
from coreanalyze.image.store import DirStore, TarStore

LAYERS = [
    [
        ("symlink", "/lib", "usr/lib"),
        ("file", "/usr/lib/libc.so.6", b"decoy"),
        ("file", "/usr/lib/gone.so", b"removed by layer 2"),
        ("file", "/opt/app/old.txt", b"emptied by layer 3"),
        ("symlink", "/usr/lib/ld.so", "/lib/real-ld.so"),
        ("file", "/usr/lib/real-ld.so", b"loader"),
        ("symlink", "/loop", "/loop"),
    ],
    [("file", "/usr/lib/libc.so.6", b"the real one"), ("whiteout", "/usr/lib/gone.so"), ("hardlink", "/usr/lib/libc-alias.so", "/usr/lib/libc.so.6")],
    [("opaque", "/opt/app"), ("file", "/opt/app/new.txt", b"kept: same layer as the opaque marker")],
]


def _index(store):
    manifest = read_manifest(store, "x86_64")
    return ImageIndex.build(store, manifest)


def _tarred(directory, tarball):
    with tarfile.open(tarball, "w") as tar:
        for path in sorted(directory.rglob("*")):
            tar.add(path, str(path.relative_to(directory)), recursive=False)
    return tarball


@pytest.fixture(params=["docker-save", "docker-save-gz", "docker-save-dir", "oci-dir", "oci-archive"])
def store(request, tmp_path):
    kind = request.param
    if kind.startswith("docker-save"):
        tarball = docker_save(tmp_path / "i.tar", LAYERS)
        if kind == "docker-save-gz":  # `docker save | gzip`
            tarball = tmp_path / "i.tar.gz"
            tarball.write_bytes(gzip.compress((tmp_path / "i.tar").read_bytes()))
        elif kind == "docker-save-dir":
            unpack(tarball, tmp_path / "unpacked")
            s = DirStore(str(tmp_path / "unpacked"))
        if kind != "docker-save-dir":
            s = TarStore(str(tarball))
    else:
        layout = oci_layout(tmp_path / "oci", LAYERS)
        s = DirStore(str(layout)) if kind == "oci-dir" else TarStore(str(_tarred(layout, tmp_path / "oci.tar")))
    yield s
    s.close()


def test_layers_whiteouts_and_symlinks(store, tmp_path):
    index = _index(store)
    libc = index.resolve("/lib/libc.so.6")
    assert libc.path == "usr/lib/libc.so.6" and libc.layer == 1
    assert index.resolve("/usr/lib/gone.so") is None
    assert index.resolve("/opt/app/old.txt") is None
    assert index.resolve("/opt/app/new.txt").layer == 2
    assert index.resolve("/lib/ld.so").path == "usr/lib/real-ld.so"
    assert index.resolve("/loop") is None
    assert index.resolve("/../../lib/libc.so.6").path == "usr/lib/libc.so.6"  # ".." stops at the root
    again = ImageIndex.from_json(index.manifest, index.to_json())
    assert again.resolve("/lib/ld.so") == index.resolve("/lib/ld.so")

    rootfs = tmp_path / "rootfs"
    got = extract(store, index, ["/lib/libc.so.6", "/usr/lib/libc-alias.so", "/lib/ld.so", "/usr/lib/gone.so"], str(rootfs))
    assert sorted(got) == ["/lib/ld.so", "/lib/libc.so.6", "/usr/lib/libc-alias.so"]
    assert (rootfs / "lib/libc.so.6").read_bytes() == b"the real one"
    assert (rootfs / "usr/lib/libc-alias.so").read_bytes() == b"the real one"
    assert (rootfs / "lib/ld.so").read_bytes() == b"loader"
    assert not any(p.is_symlink() for p in rootfs.rglob("*"))


def _raw(name, kind=tarfile.REGTYPE, link=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return ("raw", info, b"" if kind == tarfile.REGTYPE else None)


@pytest.mark.parametrize(
    "entry",
    [_raw("../x"), _raw("/etc/x"), _raw("a/../../x"), _raw("usr/lib", tarfile.SYMTYPE, "../../.."), _raw("y", tarfile.LNKTYPE, "../etc/shadow")],
)
def test_hostile_members_are_refused(entry, tmp_path):
    store = TarStore(str(docker_save(tmp_path / "h.tar", [[entry]])))
    with pytest.raises(ImageError, match="leaves the image: refused"):
        _index(store)
    store.close()


def test_several_images_in_one_tarball_are_refused(tmp_path):
    import json

    path = docker_save(tmp_path / "i.tar", LAYERS)
    with tarfile.open(path) as tar:
        entry = json.loads(tar.extractfile("manifest.json").read())[0]
    twice = tmp_path / "twice"
    twice.mkdir()
    unpack(path, twice)
    (twice / "manifest.json").write_text(json.dumps([entry, dict(entry, RepoTags=["other:2"])]))
    with pytest.raises(ImageError, match="holds 2 images"):
        read_manifest(DirStore(str(twice)), "x86_64")


def test_a_layer_that_is_not_the_one_its_config_names_is_refused(tmp_path):
    """The config's diff_ids are checked while the index is built: what the cache holds under an
    image ID is that image's."""
    import json

    directory = oci_layout(tmp_path / "oci", LAYERS)
    index = json.loads((directory / "index.json").read_text())
    blobs = directory / "blobs" / "sha256"
    manifest = json.loads((blobs / index["manifests"][0]["digest"].split(":")[1]).read_text())
    config_path = blobs / manifest["config"]["digest"].split(":")[1]
    config = json.loads(config_path.read_text())
    config["rootfs"]["diff_ids"][1] = "sha256:" + "0" * 64
    config_path.write_text(json.dumps(config))  # the blob no longer matches its name: only its content is read
    with pytest.raises(ImageError, match="is not the one its config names"):
        _index(DirStore(str(directory)))


@pytest.mark.parametrize(
    "manifest",
    ['{"a": 1}', "[]", '[{"Config": 1, "Layers": "x"}]', '[{"Config": "c.json", "Layers": ["nope/layer.tar"]}]', "not json"],
)
def test_a_malformed_manifest_is_bad_input(manifest, tmp_path):
    (tmp_path / "manifest.json").write_text(manifest)
    (tmp_path / "c.json").write_text('{"rootfs": ["not", "a", "dict"]}')
    with pytest.raises(ImageError):
        read_manifest(DirStore(str(tmp_path)), "x86_64")
