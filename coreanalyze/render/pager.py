"""Long output on a terminal goes through a pager, the way git and man do it.

Only when the output is a terminal and taller than it: piped or redirected output, and
output that fits on the screen, is written as is. The pager is $COREANALYZE_PAGER, else
$PAGER, else `less`; an empty value or `cat` turns paging off. `less` gets LESS=FRX unless
the user set LESS: quit if the text fits after all (F), pass colours through (R), and leave
the text on the screen when it quits (X).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from typing import IO, Mapping

DEFAULT_PAGER = "less"
LESS_DEFAULTS = "FRX"


def pager_command(environ: Mapping[str, str] | None = None) -> list[str] | None:
    """The pager to run as an argv, or None when paging is off or no pager is installed."""
    env = os.environ if environ is None else environ
    for name in ("COREANALYZE_PAGER", "PAGER"):
        if name in env:
            value = env[name].strip()
            break
    else:
        value = DEFAULT_PAGER
    if not value or value == "cat":
        return None
    try:
        argv = shlex.split(value)
    except ValueError:  # unbalanced quotes in $PAGER: not worth an error, just do not page
        return None
    if not argv or shutil.which(argv[0]) is None:
        return None
    return argv


def _terminal_lines(stream: IO[str]) -> int | None:
    try:
        if not stream.isatty():
            return None
        return os.get_terminal_size(stream.fileno()).lines
    except (AttributeError, OSError, ValueError):  # no fileno (a StringIO), a closed stream
        return None


def should_page(text: str, stream: IO[str]) -> bool:
    lines = _terminal_lines(stream)
    if lines is None or lines <= 0:
        return False
    return text.count("\n") >= lines - 1


def page(text: str, stream: IO[str] | None = None, environ: Mapping[str, str] | None = None) -> None:
    """Write text to stream (default stdout), through the pager when it would scroll away."""
    stream = sys.stdout if stream is None else stream
    env = os.environ if environ is None else environ
    argv = pager_command(env) if should_page(text, stream) else None
    if argv is None:
        stream.write(text)
        stream.flush()
        return
    child_env = dict(env)
    child_env.setdefault("LESS", LESS_DEFAULTS)
    child_env.setdefault("LV", "-c")  # the `lv` pager's spelling of "pass colours through"
    stream.flush()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=stream.fileno(), env=child_env)
    except OSError:  # the pager vanished or is not executable after all
        stream.write(text)
        stream.flush()
        return
    try:
        assert proc.stdin is not None
        proc.stdin.write(text.encode("utf-8", errors="replace"))
        proc.stdin.close()
    except BrokenPipeError:  # the user quit the pager before reading everything
        pass
    while True:
        try:
            proc.wait()
            return
        except KeyboardInterrupt:  # Ctrl-C belongs to the pager (less ignores it); wait on
            continue
