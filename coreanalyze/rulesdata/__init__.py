"""The one loader of the TOML files the tool reads: the shipped rules data and a user's `--rules`
and `--known` files. Each file is read, parsed and checked against the shape of its kind
(rulesdata/kinds.py); what does not fit - a file that cannot be read, is not TOML, has a key its
kind does not know or a value of the wrong type - is one line naming the file, the key path and
what was expected, raised as BadInput (exit 2).

Shipped files are parsed once per process and shared by the modules that read them (a parsed
document is read, never changed).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from coreanalyze.base import tomlfile
from coreanalyze.base.errors import BadInput
from coreanalyze.rulesdata.kinds import PACKAGE, FileKind
from coreanalyze.rulesdata.shapes import ShapeError

MAX_USER_FILE = 4 << 20  # a rules or known-crash file of a user; ours are a fraction of it


class RulesDataError(BadInput):
    """A TOML file that does not fit its kind: one line, exit 2."""


def load(path: Path | str, kind: FileKind, label: str | None = None, max_bytes: int = MAX_USER_FILE) -> dict[str, Any]:
    """The document of the file at `path`, checked against `kind`. `label` starts every message
    (default: the kind's noun and the path, "rules file team.toml")."""
    path = Path(path)
    label = label or f"{kind.noun} {path}"
    return parse(_read(path, label, max_bytes), kind, label)


def parse(text: str, kind: FileKind, label: str) -> dict[str, Any]:
    """A document given as text, checked against `kind`; `label` starts every message."""
    try:
        data = tomlfile.loads(text)
    except tomlfile.TOMLDecodeError as e:
        raise RulesDataError(f"{label}: invalid TOML: {e}") from None
    try:
        kind.shape.check(data)
    except ShapeError as e:
        raise RulesDataError(f"{label}: {e}") from None
    return data


@lru_cache(maxsize=None)
def shipped(path: Path, kind: FileKind) -> dict[str, Any]:
    """A file shipped with the package (its data, found beside the module that reads it),
    parsed and checked once per process."""
    try:
        label = path.relative_to(PACKAGE.parent).as_posix()
    except ValueError:
        label = str(path)
    return load(path, kind, label=label, max_bytes=1 << 30)


def _read(path: Path, label: str, max_bytes: int) -> str:
    try:
        if not path.is_file():
            raise RulesDataError(f"{label}: no such file")
        if path.stat().st_size > max_bytes:
            raise RulesDataError(f"{label}: larger than {max_bytes >> 20} MiB, not a file of this kind")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RulesDataError(f"{label}: not UTF-8 text") from None
    except OSError as e:
        raise RulesDataError(f"{label}: cannot read it ({e.strerror or e})") from None
