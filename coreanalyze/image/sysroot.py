"""An image as a --sysroot: the files a core needs, extracted once into a cache by image ID.

The image ID is the digest of its config, and the config names each layer's digest (checked
while the index is built, layers.py), so the cache can be keyed by it:
`<cache dir>/images/<image id>/`: index-<layers>.json (the image's tree after its
layers, built once: later cores of the same image read no layer they do not need) and rootfs/, which
the analysis then uses exactly like a --sysroot directory. A lock file per image makes the
workers of a batch wait for one another instead of reading the same layers twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from coreanalyze.base.atomicfile import write_atomically
from coreanalyze.base.buildlock import one_builder
from coreanalyze.base.cachedir import cache_dir
from coreanalyze.corefile.modules import DELETED_SUFFIX
from coreanalyze.image.errors import AmbiguousImage, ImageError
from coreanalyze.image.extract import extract
from coreanalyze.image.index import ImageIndex
from coreanalyze.image.manifest import ImageManifest, read_manifest
from coreanalyze.image.store import DirStore, TarStore
from coreanalyze.process.process import Process
from coreanalyze.symbols.paths import SYSTEM_DEBUG_DIR, build_id_relpath, valid_build_id

INDEX_VERSION = 1


def is_image(path: str) -> bool:
    """A --sysroot that is an image rather than a directory of files."""
    if os.path.isfile(path):
        return True
    return os.path.isdir(path) and any(os.path.isfile(os.path.join(path, n)) for n in ("oci-layout", "manifest.json"))


def image_cache() -> Path:
    return cache_dir() / "images"


@dataclass
class ImageSysroot:
    root: str  # the directory that serves as the sysroot
    manifest: ImageManifest
    index: ImageIndex

    def origin(self, path: str) -> dict | None:
        """Where in the image a path's file comes from."""
        found = self.index.resolve(path)
        if found is None:
            return None
        layers = self.manifest.layers
        return {
            "kind": "image",
            "image": self.manifest.name,
            "image_id": self.manifest.image_id,
            "path": "/" + found.path,
            "layer": found.layer + 1,
            "layers": len(layers),
            "layer_digest": layers[found.layer].digest,
        }

    def describe(self, path: str) -> str | None:
        found = self.origin(path)
        if found is None:
            return None
        return f"image {self.manifest.label}, layer {found['layer']}/{found['layers']}"


@contextlib.contextmanager
def _opened(path: str):
    store = TarStore(path) if os.path.isfile(path) else DirStore(path)
    try:
        yield store
    finally:
        store.close()


# How long one process waits for another indexing or extracting the same image; past it (a
# stopped or stuck holder) it does the work itself rather than hang.
LOCK_WAIT_SECONDS = 900.0


@contextlib.contextmanager
def _locked(directory: Path):
    directory.mkdir(parents=True, exist_ok=True)
    with one_builder(directory / "rootfs", wait=LOCK_WAIT_SECONDS):
        yield


def _index(store, manifest: ImageManifest, directory: Path) -> ImageIndex:
    # Where a file is inside a layer depends on how the layer is stored (plain or compressed),
    # so an index is kept per set of layer blobs: the same image saved by docker (plain layers)
    # and as an OCI layout (gzip'd layers) shares rootfs/, not its index.
    blobs = "\n".join(ref.digest or ref.member for ref in manifest.layers)
    kept = directory / f"index-{hashlib.sha256(blobs.encode()).hexdigest()[:16]}.json"
    try:
        data = json.loads(kept.read_text(encoding="utf-8"))
        if data.get("version") == INDEX_VERSION and len(data.get("plain", [])) == len(manifest.layers):
            return ImageIndex.from_json(manifest, data)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    index = ImageIndex.build(store, manifest)
    write_atomically(kept, json.dumps({"version": INDEX_VERSION, **index.to_json()}, separators=(",", ":")))
    return index


def prepare_image(path: str, arch: str | None = None) -> ImageManifest | None:
    """Read and index an image once (a batch does this before its workers start); ImageError
    for one that cannot be used. None for a multi-platform image: each core's architecture
    picks its manifest later."""
    with _opened(path) as store:
        try:
            manifest = read_manifest(store, arch)
        except AmbiguousImage:
            return None
        directory = image_cache() / manifest.image_id.replace(":", "-")
        with _locked(directory):
            _index(store, manifest, directory)
        return manifest


def image_sysroot(path: str, process: Process) -> ImageSysroot:
    """The image at path as a sysroot directory holding what this core needs."""
    with _opened(path) as store:
        manifest = read_manifest(store, process.arch)
        directory = image_cache() / manifest.image_id.replace(":", "-")
        rootfs = str(directory / "rootfs")
        with _locked(directory):
            index = _index(store, manifest, directory)
            mapped = _mapped_paths(process)
            extract(store, index, mapped + _build_id_debug_files(process), rootfs)
            extract(store, index, _debuglink_files(mapped, rootfs), rootfs)
    if not os.path.isdir(rootfs):
        os.makedirs(rootfs, exist_ok=True)  # nothing of the core is in the image: all missing
    return ImageSysroot(rootfs, manifest, index)


def _mapped_paths(process: Process) -> list[str]:
    """Every name the process had for its files: the kernel's paths of its mappings, and the
    dynamic loader's names (gdb looks libraries up by those)."""
    paths = [m.path for m in process.mappings if m.path.startswith("/") and not m.path.endswith(DELETED_SUFFIX)]
    if process.executable:
        paths.append(process.executable)
    try:
        paths += [library.name for library in process.loaded_libraries]
    except (OSError, ValueError):
        pass
    return list(dict.fromkeys(paths))


def _build_id_debug_files(process: Process) -> list[str]:
    out = []
    for build_id in process.build_ids.values():
        valid = valid_build_id(build_id)
        if valid:
            out.append(os.path.join(SYSTEM_DEBUG_DIR, build_id_relpath(valid)))
    return out


def _debuglink_files(mapped: list[str], rootfs: str) -> list[str]:
    """Where gdb and the symbolizer look for a .gnu_debuglink's file, for each extracted one."""
    from coreanalyze.symbols.locate import read_debuglink
    from coreanalyze.symbols.paths import under

    out = []
    for path in mapped:
        local = under(rootfs, path)
        link = read_debuglink(local) if local and os.path.isfile(local) else None
        if link is None:
            continue
        directory = os.path.dirname(path)
        out += [
            os.path.join(directory, link.name),
            os.path.join(directory, ".debug", link.name),
            SYSTEM_DEBUG_DIR + os.path.join(directory, link.name),
        ]
    return out


__all__ = ["ImageError", "ImageSysroot", "image_cache", "image_sysroot", "is_image", "prepare_image"]
