"""The lines of a pasted text around the crash that no parser read as a frame: the log lines
before the verdict, the command or Python statement that ran, the libraries it names.

The classifier's line rules read them (rules.toml, `line = ...`): each line is given with its
distance from the crash's own line, so that the nearest evidence weighs most, and with whether
a later command ran after it (a rule about "what ran last" skips such lines).
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd

# Lines either side of the crash's line that are read; further ones say little about it.
REACH = 60
# A command that ran: one typed at a prompt (IPython, a shell; the cleaner already took away
# Python's `>>> `), or a Python statement that does something (an assignment, a call; not an
# import, not a print that only probes whether the line before it ran).
_PROMPT = re.compile(r"^(?:In \[\d{1,6}\]:|[$%#]|\S{1,80}[@:]\S{0,200}[$#%])\s+\S")
_STATEMENT = re.compile(r"^(?!print\()[A-Za-z_][\w.]*(?:\[[^\]]{0,80}\])?\s*(?:[-+*/]?=(?!=)\s*\S.*|\(.*\)\s*;?)$")


def is_command(line: str) -> bool:
    """A command that ran: typed at a prompt, or a Python statement that does something."""
    return bool(_PROMPT.match(line) or _STATEMENT.match(line))


def crash_line(found: list[fd.Finding], total: int) -> int:
    """The line that states the crash: the surest signal's, else the first fatal message's,
    else the text's last line (a bare stack: the crash is where the paste ends)."""
    with_signal = [f for f in found if f.signal is not None]
    if with_signal:
        return max(with_signal, key=lambda f: (f.signal_strength, f.line)).line
    with_message = [f for f in found if f.messages]
    if with_message:
        return min(f.line for f in with_message)
    return max(total - 1, 0)


def context_lines(lines: list[str], claimed: bytearray, at: int) -> list[tuple[int, str, bool]]:
    """(distance from `at`, stripped line, whether it is not among what ran last before the
    crash) for the unclaimed non-empty lines within REACH."""
    out = []
    last_command = next((i for i in range(at, max(-1, at - REACH - 1), -1) if is_command(lines[i].strip())), None)
    for i in range(max(0, at - REACH), min(len(lines), at + REACH + 1)):
        s = lines[i].strip()
        if s and not claimed[i]:
            # After the crash's line nothing ran; before the last command, that command ran later.
            superseded = i > at or (last_command is not None and i < last_command)
            out.append((abs(i - at), s, superseded))
    return out


def whole_text(lines: list[str], claimed: bytearray, at: int) -> list[tuple[int, str, bool]]:
    """(distance from `at`, stripped line, whether a parser claimed it) for every non-empty line
    of the text: what the `anywhere` line rules read when nothing within REACH named a subsystem
    (a title, the script pasted above a long log, the app's name on the verdict's own line)."""
    return [(abs(i - at), s[:2000], bool(claimed[i])) for i, line in enumerate(lines) if (s := line.strip())]
