"""The arguments of the walker's gdb command (-coreanalyze-pystacks), as walk() takes them."""

from __future__ import annotations

from .walker import MAX_FRAMES

COMMAND = "coreanalyze-pystacks"


class UnknownArgument(ValueError):
    """An option the MI command does not know."""


def parse_args(argv: list[str]) -> dict:
    """Options of the MI command; ValueError or StopIteration on bad arguments."""
    options: dict = {}
    it = iter(argv)
    for arg in it:
        if arg == "--locals":
            options["locals"] = True
        elif arg == "--locals-tid":
            options["locals_tid"] = int(next(it))
        elif arg == "--locals-frames":
            options["locals_frames"] = max(0, min(int(next(it)), MAX_FRAMES))
        elif arg == "--python-version":
            major, minor = next(it).split(".")[:2]
            options["version_hint"] = (int(major), int(minor))
        elif arg == "--runtime":
            options["runtime"] = int(next(it), 0)
        elif arg == "--imports":
            options["imports"] = True
        elif arg == "--show-layout":
            options["show_layout"] = True
        else:
            raise UnknownArgument(f"unknown argument {arg!r}")
    return options
