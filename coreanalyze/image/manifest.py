"""Which layers make the image, in order: from `docker save`'s manifest.json or an OCI index.

Layouts read:
- `docker save` before Docker 25 and `podman save`: manifest.json naming `<id>/layer.tar` (or
  `<id>.tar`) layers and a `<id>.json` config;
- `docker save` from Docker 25 on: the same manifest.json naming `blobs/sha256/<hex>` files of
  an OCI layout in the same tarball;
- an OCI image layout (a directory, or `podman save --format oci-archive`): oci-layout,
  index.json -> manifest (through a nested index, the platform of the core) -> layers.

The image is identified by its config's digest (the image ID `docker images` shows), computed
here from the bytes, never taken from a name.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from coreanalyze.image.errors import AmbiguousImage, ImageError
from coreanalyze.image.store import read_small

_DIGEST = re.compile(r"^(sha256|sha512):([0-9a-f]{64}|[0-9a-f]{128})$")
# The core's machine -> the OCI platform architecture.
OCI_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "i386": "386", "arm": "arm", "ppc64le": "ppc64le", "s390x": "s390x"}
INDEX_TYPES = ("application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json")
MAX_LAYERS = 1000


@dataclass(frozen=True)
class LayerRef:
    member: str  # its file in the store
    digest: str | None  # sha256:... (the blob's digest, or the config's diff_id)
    diff_id: str | None = None  # the config's digest of the uncompressed layer, checked on reading


@dataclass(frozen=True)
class ImageManifest:
    name: str | None  # a tag or reference name the image was saved under
    image_id: str  # sha256:<hex> of the config blob
    layers: tuple[LayerRef, ...]
    layout: str  # "docker-save" | "oci"

    @property
    def label(self) -> str:
        short = self.image_id.split(":", 1)[-1][:12]
        return f"{self.name} ({short})" if self.name else short


def printable(name) -> str | None:
    """An image's own name (untrusted) as one printable line for messages and reports."""
    if not isinstance(name, str):
        return None
    return "".join(c for c in name if c.isprintable())[:200] or None


def blob_member(digest: str) -> str:
    found = _DIGEST.match(digest or "")
    if not found:
        raise ImageError(f"the image names a blob by {str(digest)[:80]!r}, which is no digest")
    return f"blobs/{found.group(1)}/{found.group(2)}"


def _json(store, name: str):
    try:
        return json.loads(read_small(store, name))
    except (ValueError, UnicodeDecodeError) as e:
        raise ImageError(f"{store.path}: {name} is not JSON ({e})") from None


def read_manifest(store, arch: str | None) -> ImageManifest:
    try:
        if store.has("manifest.json"):
            return _docker_save(store)
        if store.has("index.json"):
            return _oci(store, arch)
    except (AttributeError, TypeError, KeyError, IndexError) as e:
        # JSON of the right syntax but not of the shape the layouts define.
        raise ImageError(f"{store.path}: its manifest or index is malformed ({type(e).__name__})") from None
    raise ImageError(f"{store.path}: neither a docker save tarball (manifest.json) nor an OCI image layout (index.json)")


def _config_id(store, member: str) -> tuple[str, dict]:
    raw = read_small(store, member)
    try:
        config = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        config = {}
    return "sha256:" + hashlib.sha256(raw).hexdigest(), config if isinstance(config, dict) else {}


def _diff_ids(config: dict, count: int) -> list[str | None]:
    """The config's digests of the uncompressed layers, one per layer (None where it has none)."""
    given = (config.get("rootfs") or {}).get("diff_ids")
    given = given if isinstance(given, list) else []
    out = [d if isinstance(d, str) and _DIGEST.match(d) else None for d in given[:count]]
    return out + [None] * (count - len(out))


def _docker_save(store) -> ImageManifest:
    entries = _json(store, "manifest.json")
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise ImageError(f"{store.path}: manifest.json lists no image")
    if len(entries) > 1:
        names = ", ".join(_tag(e) or "untagged" for e in entries[:5])
        raise ImageError(f"{store.path} holds {len(entries)} images ({names}); save only the one the process ran in")
    entry = entries[0]
    layers = entry.get("Layers")
    config_member = entry.get("Config")
    if not isinstance(layers, list) or not all(isinstance(x, str) for x in layers) or not isinstance(config_member, str):
        raise ImageError(f"{store.path}: manifest.json does not name the image's config and layers")
    if len(layers) > MAX_LAYERS:
        raise ImageError(f"{store.path}: more than {MAX_LAYERS} layers")
    image_id, config = _config_id(store, config_member)
    diff_ids = _diff_ids(config, len(layers))
    refs = []
    for member, diff_id in zip(layers, diff_ids):
        found = re.match(r"^blobs/(sha256)/([0-9a-f]{64})$", member)
        refs.append(LayerRef(member, f"{found.group(1)}:{found.group(2)}" if found else diff_id, diff_id))
    return ImageManifest(_tag(entry), image_id, tuple(refs), "docker-save")


def _tag(entry: dict) -> str | None:
    tags = entry.get("RepoTags")
    return printable(tags[0]) if isinstance(tags, list) and tags else None


def _oci(store, arch: str | None) -> ImageManifest:
    index = _json(store, "index.json")
    name = None
    for _depth in range(4):  # index -> (nested index ->) manifest
        manifests = index.get("manifests") if isinstance(index, dict) else None
        if not isinstance(manifests, list) or not manifests:
            raise ImageError(f"{store.path}: the OCI index lists no manifest")
        chosen = _choose(store, manifests, arch)
        annotations = chosen.get("annotations") or {}
        name = name or annotations.get("io.containerd.image.name") or annotations.get("org.opencontainers.image.ref.name")
        document = _json(store, blob_member(chosen.get("digest")))
        if chosen.get("mediaType") in INDEX_TYPES or document.get("mediaType") in INDEX_TYPES or "manifests" in document:
            index = document
            continue
        layers = document.get("layers")
        config = document.get("config") or {}
        if not isinstance(layers, list) or not isinstance(config, dict):
            raise ImageError(f"{store.path}: the OCI manifest names no layers")
        if len(layers) > MAX_LAYERS:
            raise ImageError(f"{store.path}: more than {MAX_LAYERS} layers")
        image_id, parsed = _config_id(store, blob_member(config.get("digest")))
        diff_ids = _diff_ids(parsed, len(layers))
        refs = tuple(
            LayerRef(blob_member(x.get("digest") if isinstance(x, dict) else None), x["digest"], diff_id)
            for x, diff_id in zip(layers, diff_ids)
        )
        return ImageManifest(printable(name), image_id, refs, "oci")
    raise ImageError(f"{store.path}: OCI indexes nested too deep")


def _choose(store, manifests: list, arch: str | None) -> dict:
    usable = [m for m in manifests if isinstance(m, dict)]
    if len(usable) == 1:
        return usable[0]
    wanted = OCI_ARCH.get(arch or "", arch)
    matching = [m for m in usable if ((m.get("platform") or {}).get("architecture")) == wanted]
    if len(matching) == 1:
        return matching[0]
    raise AmbiguousImage(f"{store.path}: the OCI index lists {len(usable)} manifests and none is the one image for {arch or 'this core'}")
