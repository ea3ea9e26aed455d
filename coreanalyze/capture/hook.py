"""The startup hook's file in this interpreter's site-packages: where it is, put it there, take
it away. Wheels install it themselves; an editable install needs `coreanalyze guard --install`."""

from __future__ import annotations

import sysconfig
from pathlib import Path

HOOK = "coreanalyze-guard.pth"


def hook_path() -> Path:
    return Path(sysconfig.get_paths()["purelib"]) / HOOK


def hook_text() -> str:
    return (Path(__file__).parent / HOOK).read_text(encoding="utf-8")


def installed() -> bool:
    try:
        return hook_path().read_text(encoding="utf-8") == hook_text()
    except OSError:
        return False


def install() -> Path:
    path = hook_path()
    path.write_text(hook_text(), encoding="utf-8")
    return path


def uninstall() -> Path | None:
    path = hook_path()
    if path.exists():
        path.unlink()
        return path
    return None
