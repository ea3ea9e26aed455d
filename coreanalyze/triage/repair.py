"""Undo the damage a crash text takes on its way into a ticket, before any parser reads it.

    a terminal or e-mail client that hard-wrapped every line at a fixed width (80 columns):
        F c:\\tf_jenkins\\...\\tensorflow\\stre
        am_executor\\cuda\\cuda_driver.cc:94] Check failed: ...
    a wide terminal's padding copied into the middle of a wrapped line ("cpuset=/,me      ms_allowed")
    a tracker that turned gdb's frame numbers into issue links ("[#12](https://github.com/o/r/issues/12)",
    "owner/repo#12" at the start of a line)

Each repair is one linear pass; nothing is guessed from what a line says, only from its shape.
"""

from __future__ import annotations

import re
from collections import Counter

# A fixed width is believed only when this many lines end exactly at it and go on in the next line...
MIN_WRAPPED_LINES = 3
# ...the lines that long make at least this share of the lines at least that long...
MIN_WRAPPED_SHARE = 0.5
# ...and at least this share of them go on in the next line (the others are lines of their own).
MIN_CONTINUED_SHARE = 0.75
MIN_WIDTH = 60
# Terminals, e-mail and consoles wrap at a few hundred columns at most; longer lines of one length
# are a text's own (a repeated record), not a wrap.
MAX_WIDTH = 300
# A capitalized word of prose: after a line that ended a sentence, a new sentence.
_SENTENCE = re.compile(r"[A-Z][a-z]{0,30}[ ,]")
# How many characters of a line's first word say what kind of record it is.
_LEAD = 16
# Terminal padding inside a line: a run of spaces this long between two non-blanks.
_PADDING = re.compile(r"(?<=\S) {60,}(?=\S)")
# "[#12](https://github.com/owner/repo/issues/12)" -> "#12"; "owner/repo#12 " at a line's start -> "#12 ".
_LINKED_NUMBER = re.compile(r"\[#(\d{1,6})\]\(https?://[^)\s]{1,300}\)")
_REPO_NUMBER = re.compile(r"^([ \t>]*)[\w.-]{1,100}/[\w.-]{1,100}#(\d{1,6})(?=\s)")


def repair(lines: list[str]) -> tuple[list[str], list[str]]:
    """(repaired lines, warnings saying what was repaired)."""
    warnings: list[str] = []
    lines, linked = _unlink(lines)
    if linked:
        warnings.append(f"{linked} frame number(s) had become issue links and were read back as frame numbers")
    width = wrap_width(lines)
    if width is not None:
        lines, joined = _unwrap(lines, width)
        warnings.append(f"the text was wrapped at {width} columns; {joined} wrapped line(s) were joined back")
    if any("      " in line for line in lines):
        lines = [_PADDING.sub("", line) if "      " in line else line for line in lines]
    return lines, warnings


def _unlink(lines: list[str]) -> tuple[list[str], int]:
    count = 0
    out = []
    for line in lines:
        # Test before substituting: a gdb backtrace has '#' on every line, and a substitution
        # costs far more than a test (a million frames: 7 s against under 1).
        if "[#" in line:
            line, n = _LINKED_NUMBER.subn(r"#\1", line)
            count += n
        if "#" in line and _REPO_NUMBER.match(line) is not None:
            line = _REPO_NUMBER.sub(r"\1#\2", line, count=1)
            count += 1
        out.append(line)
    return out, count


def wrap_width(lines: list[str]) -> int | None:
    """The column at which every long line was cut, if the text was hard-wrapped."""
    lengths = Counter(len(line) for line in lines if MIN_WIDTH <= len(line) <= MAX_WIDTH)
    if not lengths:
        return None
    # The cut lines are the longest of a wrapped text: on a tie, the longer length is the width.
    width, count = max(lengths.items(), key=lambda kv: (kv[1], kv[0]))
    longer = sum(1 for line in lines if len(line) >= width)
    if count < MIN_WRAPPED_LINES or count < MIN_WRAPPED_SHARE * longer:
        return None
    # A wrapped text has (almost) nothing longer than its width.
    if sum(1 for line in lines if len(line) > width) > count // 4:
        return None
    # Lines of one length are also a text's own: the same frame in every thread followed by gdb's
    # indented "at file:line", records of a fixed layout. A cut line goes on in the next line; a
    # line of its own is followed by the text's next line.
    cuts = [not _starts_own_line(line, following) for line, following in zip(lines, lines[1:]) if len(line) == width and following.strip()]
    continued = sum(cuts)
    if continued < MIN_WRAPPED_LINES or continued < MIN_CONTINUED_SHARE * len(cuts):
        return None
    return width


def _starts_own_line(line: str, following: str) -> bool:
    """Whether the line after a line of the width long begins a line of its own rather than going
    on with it: it is indented (two blanks or a tab) after a line that ended in a word (a cut inside
    a run of blanks leaves blanks on both sides; one before a single blank leaves one); it begins a
    sentence after a line that ended one ("... failed." then "A problem internal to GDB ..."); or
    it begins with a first word of the line's own shape holding a digit or a sign (a date, a time,
    a pid marker, a counter): the same kind of record as the line, not its rest."""
    if (following[:2].isspace() or following[:1] == "\t") and not line[-1:].isspace():
        return True
    if line[-1:] in ".!?" and _SENTENCE.match(following):
        return True
    first, second = _lead_shape(line), _lead_shape(following)
    return first == second and any(c != "a" for c in first)


def _lead_shape(line: str) -> str:
    """A line's first word as a shape: digits 0, letters a, other characters as they are."""
    words = line.split(None, 1)
    return "".join("0" if c.isdigit() else "a" if c.isalpha() else c for c in words[0][:_LEAD]) if words else ""


def _unwrap(lines: list[str], width: int) -> tuple[list[str], int]:
    out: list[str] = []
    joined = 0
    carry: str | None = None
    for line in lines:
        if carry is not None:
            # A blank line, or a line of its own, follows a line that was the width long by itself.
            if line.strip() and not _starts_own_line(carry, line):
                line = carry + line
                joined += 1
            else:
                out.append(carry)
        # A line cut at the width continues on the next line (a run of cuts is one long line).
        if len(line) % width == 0 and line.strip():
            carry = line
            continue
        carry = None
        out.append(line)
    if carry is not None:
        out.append(carry)
    return out, joined
