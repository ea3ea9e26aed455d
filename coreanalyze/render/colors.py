"""ANSI colours for terminal output, only when asked for.

The renderers never look at the terminal themselves: the CLI decides (`color_wanted`) and
passes `color=True/False`, so that rendering stays a pure function of the report.
"""

from __future__ import annotations

import os
from typing import IO, Mapping

_CODES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "blue": "34",
    "magenta": "35",
    "cyan": "36",
}
_RESET = "\x1b[0m"


def color_wanted(stream: IO[str], environ: Mapping[str, str] | None = None) -> bool:
    """Colour on a terminal unless NO_COLOR is set (https://no-color.org) or TERM is dumb."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):  # a closed or detached stream
        return False


class Palette:
    """Wraps text in ANSI styles when enabled; returns it untouched otherwise."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def style(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles or not text:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}{_RESET}"

    def bold(self, text: str) -> str:
        return self.style(text, "bold")

    def dim(self, text: str) -> str:
        return self.style(text, "dim")

    def bad(self, text: str) -> str:
        """The thing that went wrong: signal, fault kind, culprit."""
        return self.style(text, "bold", "red")

    def warn(self, text: str) -> str:
        return self.style(text, "yellow")

    def good(self, text: str) -> str:
        return self.style(text, "green")

    def name(self, text: str) -> str:
        """Function and thread names."""
        return self.style(text, "cyan")

    def python(self, text: str) -> str:
        """Python frames, so that they stand out among native ones."""
        return self.style(text, "magenta")

    def heading(self, text: str) -> str:
        return self.style(text, "bold", "blue")
