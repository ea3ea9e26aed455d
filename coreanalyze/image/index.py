"""The image's file tree after its layers are applied in order, without unpacking anything.

Each visible path maps to where its bytes are: (layer, place in the layer, size). Whiteouts
are honoured as the OCI spec and overlayfs have them: `.wh.<name>` removes <name> of the
layers below, `.wh..wh..opq` empties its directory of what the layers below put there, and an
entry of another kind (a file over a directory, a directory over a symlink) replaces what was
there. Paths are resolved inside the image: symlinks (absolute ones from the image's root)
are followed in this tree only, never on this machine, and ".." stops at the image's root.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from coreanalyze.image.errors import ImageError
from coreanalyze.image.layers import checked_link, checked_name, open_layer
from coreanalyze.image.manifest import ImageManifest

WHITEOUT, OPAQUE = ".wh.", ".wh..wh..opq"
MAX_ENTRIES = 2_000_000
MAX_SYMLINK_HOPS = 40  # as Linux (ELOOP)
FILE, DIR, SYMLINK, OTHER = "f", "d", "l", "o"


class Node:
    __slots__ = ("kind", "layer", "loc", "size", "link", "children")

    def __init__(self, kind: str, layer: int = -1, loc: int = 0, size: int = 0, link: str = ""):
        self.kind, self.layer, self.loc, self.size, self.link = kind, layer, loc, size, link
        self.children: dict[str, Node] | None = {} if kind == DIR else None


@dataclass(frozen=True)
class Found:
    path: str  # where the file is in the image, symlinks resolved
    layer: int  # index into the manifest's layers
    loc: int  # offset of its data (plain layer) or its position in the stream (compressed)
    size: int
    plain: bool


class ImageIndex:
    def __init__(self, manifest: ImageManifest, plain: list[bool] | None = None):
        self.manifest = manifest
        self.root = Node(DIR)
        self.plain = plain or []
        self.count = 0

    # --- building -------------------------------------------------------------------------

    @classmethod
    def build(cls, store, manifest: ImageManifest) -> ImageIndex:
        index = cls(manifest)
        for number, ref in enumerate(manifest.layers):
            with open_layer(store, ref, verify=True) as (tar, plain):
                index.plain.append(plain)
                index._apply(tar, number, plain, ref.member)
        return index

    def _apply(self, tar, layer: int, plain: bool, label: str) -> None:
        added: list[tuple[str, Node]] = []
        hardlinks: list[tuple[str, str]] = []
        whiteouts: list[str] = []
        opaque: list[str] = []
        for position, member in enumerate(tar):
            name = checked_name(member, label)
            if not name:
                continue
            base = posixpath.basename(name)
            if base == OPAQUE:
                opaque.append(posixpath.dirname(name))
                continue
            if base.startswith(WHITEOUT):
                whiteouts.append(posixpath.join(posixpath.dirname(name), base[len(WHITEOUT) :]))
                continue
            self.count += 1
            if self.count > MAX_ENTRIES:
                raise ImageError(f"the image has more than {MAX_ENTRIES} files: refused")
            if member.isfile():
                added.append((name, Node(FILE, layer, member.offset_data if plain else position, member.size)))
            elif member.isdir():
                added.append((name, Node(DIR)))
            elif member.issym():
                added.append((name, Node(SYMLINK, link=checked_link(member, name, label))))
            elif member.islnk():
                hardlinks.append((name, checked_link(member, name, label)))
            else:
                added.append((name, Node(OTHER)))
        # A layer's whiteouts hide what the layers below it hold, never its own entries.
        for path in whiteouts:
            parent = self._lookup(posixpath.dirname(path))
            if parent is not None and parent.children is not None:
                parent.children.pop(posixpath.basename(path), None)
        for path in opaque:
            directory = self._lookup(path)
            if directory is not None and directory.children is not None:
                directory.children.clear()
        for name, node in added:
            self._put(name, node)
        for name, target in hardlinks:  # a hard link shares its target's bytes in this layer
            found = self._lookup(target)
            if found is not None and found.kind == FILE:
                self._put(name, Node(FILE, found.layer, found.loc, found.size))

    def _lookup(self, path: str) -> Node | None:
        """The node at a literal path (no symlinks followed), or None."""
        node = self.root
        for part in filter(None, path.split("/")):
            if node.children is None:
                return None
            node = node.children.get(part)
            if node is None:
                return None
        return node

    def _put(self, path: str, node: Node) -> None:
        parts = path.split("/")
        directory = self.root
        for part in parts[:-1]:
            child = directory.children.get(part)
            if child is None or child.kind != DIR:
                # overlayfs: a directory of an upper layer hides a non-directory below it.
                child = directory.children[part] = Node(DIR)
            directory = child
        old = directory.children.get(parts[-1])
        if node.kind == DIR and old is not None and old.kind == DIR:
            return  # a directory over a directory: both layers' entries stay visible
        directory.children[parts[-1]] = node

    # --- reading --------------------------------------------------------------------------

    def resolve(self, path: str) -> Found | None:
        """The regular file a path names in the image, symlinks followed inside it; None when
        there is none (absent, whited out, a directory, a symlink loop)."""
        todo = [p for p in path.split("/") if p and p != "."][::-1]
        trail: list[tuple[str, Node]] = []
        hops = 0
        while todo:
            part = todo.pop()
            if part == ".":
                continue
            if part == "..":
                if trail:
                    trail.pop()
                continue
            directory = trail[-1][1] if trail else self.root
            if directory.children is None:
                return None
            node = directory.children.get(part)
            if node is None:
                return None
            if node.kind == SYMLINK:
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    return None
                if node.link.startswith("/"):
                    trail = []
                todo.extend([p for p in node.link.split("/") if p][::-1])
                continue
            trail.append((part, node))
        if not trail or trail[-1][1].kind != FILE:
            return None
        node = trail[-1][1]
        return Found("/".join(name for name, _ in trail), node.layer, node.loc, node.size, self.plain[node.layer])

    # --- kept in the cache ----------------------------------------------------------------

    def to_json(self) -> dict:
        entries: list[list] = []
        stack = [("", self.root)]
        while stack:
            prefix, directory = stack.pop()
            for name, node in directory.children.items():
                path = f"{prefix}/{name}" if prefix else name
                entries.append([path, node.kind, node.layer, node.loc, node.size, node.link])
                if node.kind == DIR:
                    stack.append((path, node))
        return {"plain": self.plain, "entries": entries}

    @classmethod
    def from_json(cls, manifest: ImageManifest, data: dict) -> ImageIndex:
        index = cls(manifest, list(data["plain"]))
        for path, kind, layer, loc, size, link in data["entries"]:
            if kind != DIR:
                index._put(path, Node(kind, layer, loc, size, link))
            elif index._lookup(path) is None:
                index._put(path, Node(DIR))
        return index
