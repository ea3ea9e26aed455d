"""Container images built by the tests in the layouts `docker save`, `podman save` and OCI tools
write: a tarball with manifest.json and <id>/layer.tar (Docker before 25, podman), the same with
an OCI layout inside (Docker 25+), and an OCI image layout directory with compressed layers.

A layer is a list of entries, applied in order by the reader:
    ("file", "/path/in/image", Path on this machine | bytes)
    ("symlink", "/path/in/image", "target")
    ("hardlink", "/path/in/image", "/earlier/member/of/this/layer")
    ("whiteout", "/path/removed/from/the/layers/below")
    ("opaque", "/directory/emptied/of/the/layers/below")
    ("raw", tarfile.TarInfo, bytes | None)            # anything at all, for hostile images
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

Entry = tuple


def layer_tar(entries: list[Entry]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        made_dirs: set[str] = set()

        def parents(name: str) -> None:
            parts = name.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d not in made_dirs:
                    made_dirs.add(d)
                    info = tarfile.TarInfo(d)
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)

        for entry in entries:
            kind = entry[0]
            if kind == "raw":
                _, info, data = entry
                tar.addfile(info, io.BytesIO(data) if data is not None else None)
                continue
            name = entry[1].lstrip("/")
            if kind == "file":
                data = entry[2] if isinstance(entry[2], bytes) else Path(entry[2]).read_bytes()
                parents(name)
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o755
                tar.addfile(info, io.BytesIO(data))
            elif kind in ("symlink", "hardlink"):
                parents(name)
                info = tarfile.TarInfo(name)
                info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
                info.linkname = entry[2] if kind == "symlink" else entry[2].lstrip("/")
                tar.addfile(info)
            elif kind in ("whiteout", "opaque"):
                directory, base = (name, ".wh..wh..opq") if kind == "opaque" else (os.path.dirname(name), ".wh." + os.path.basename(name))
                marker = f"{directory}/{base}" if directory else base
                parents(marker)
                tar.addfile(tarfile.TarInfo(marker), io.BytesIO(b""))
            else:
                raise ValueError(kind)
    return out.getvalue()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _config(diff_ids: list[str]) -> bytes:
    return json.dumps({
        "architecture": "amd64", "os": "linux", "config": {"Cmd": ["/bin/sh"]},
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }).encode()  # fmt: skip


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    tar.addfile(info, io.BytesIO(data))


def docker_save(path: Path, layers: list[list[Entry]], tag: str = "crasher:1", oci_inside: bool = False) -> Path:
    """A `docker save` tarball: the legacy layout, or Docker 25+'s (oci_inside)."""
    tars = [layer_tar(layer) for layer in layers]
    config = _config([f"sha256:{_sha(t)}" for t in tars])
    with tarfile.open(path, "w") as out:
        if oci_inside:
            for t in tars:
                _add(out, f"blobs/sha256/{_sha(t)}", t)
            _add(out, f"blobs/sha256/{_sha(config)}", config)
            manifest = _oci_manifest(config, tars, "application/vnd.oci.image.layer.v1.tar")
            _add(out, f"blobs/sha256/{_sha(manifest)}", manifest)
            _add(out, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
            _add(out, "index.json", _oci_index(manifest, tag))
            entry = {"Config": f"blobs/sha256/{_sha(config)}", "RepoTags": [tag], "Layers": [f"blobs/sha256/{_sha(t)}" for t in tars]}
        else:
            ids = []
            parent = ""
            for t in tars:
                v1 = _sha((parent + _sha(t)).encode())
                ids.append(v1)
                _add(out, f"{v1}/VERSION", b"1.0")
                _add(out, f"{v1}/json", json.dumps({"id": v1, **({"parent": parent} if parent else {})}).encode())
                _add(out, f"{v1}/layer.tar", t)
                parent = v1
            _add(out, f"{_sha(config)}.json", config)
            name, version = tag.rsplit(":", 1)
            _add(out, "repositories", json.dumps({name: {version: ids[-1]}}).encode())
            entry = {"Config": f"{_sha(config)}.json", "RepoTags": [tag], "Layers": [f"{v1}/layer.tar" for v1 in ids]}
        _add(out, "manifest.json", json.dumps([entry]).encode())
    return path


def _oci_manifest(config: bytes, blobs: list[bytes], layer_type: str | list[str]) -> bytes:
    types = layer_type if isinstance(layer_type, list) else [layer_type] * len(blobs)
    return json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": f"sha256:{_sha(config)}", "size": len(config)},
        "layers": [{"mediaType": t, "digest": f"sha256:{_sha(b)}", "size": len(b)} for t, b in zip(types, blobs)],
    }).encode()  # fmt: skip


def _oci_index(manifest: bytes, tag: str) -> bytes:
    return json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": f"sha256:{_sha(manifest)}",
            "size": len(manifest), "annotations": {"org.opencontainers.image.ref.name": tag},
        }],
    }).encode()  # fmt: skip


def oci_layout(directory: Path, layers: list[list[Entry]], tag: str = "crasher:1", zstd_layers: tuple[int, ...] = ()) -> Path:
    """An OCI image layout directory; layers gzip-compressed, those in zstd_layers zstd."""
    tars = [layer_tar(layer) for layer in layers]
    blobs, types = [], []
    for i, t in enumerate(tars):
        if i in zstd_layers:
            import zstandard

            blobs.append(zstandard.ZstdCompressor().compress(t))
            types.append("application/vnd.oci.image.layer.v1.tar+zstd")
        else:
            blobs.append(gzip.compress(t, mtime=0))
            types.append("application/vnd.oci.image.layer.v1.tar+gzip")
    config = _config([f"sha256:{_sha(t)}" for t in tars])
    manifest = _oci_manifest(config, blobs, types)
    (directory / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
    for blob in (*blobs, config, manifest):
        (directory / "blobs" / "sha256" / _sha(blob)).write_bytes(blob)
    (directory / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')
    (directory / "index.json").write_bytes(_oci_index(manifest, tag))
    return directory


def unpack(tarball: Path, dest: Path) -> None:
    """Unpack a tarball the tests built (the `docker save` directory layout); Python's "data"
    filter where this Python has it (3.11.4+; Debian's 3.11.2 has not)."""
    with tarfile.open(tarball) as tar:
        tar.extractall(dest, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
