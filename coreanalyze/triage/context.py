"""The lines of a pasted text around the crash that no parser read as a frame: the log lines
before the verdict, the command or Python statement that ran, the libraries it names.

The classifier's line rules read them (rules.toml, `line = ...`): each line is given with its
distance from the crash's own line, so that the nearest evidence weighs most.
"""

from __future__ import annotations

from . import findings as fd

# Lines either side of the crash's line that are read; further ones say little about it.
REACH = 60


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


def context_lines(lines: list[str], claimed: bytearray, at: int) -> list[tuple[int, str]]:
    """(distance from `at`, stripped line) for the unclaimed non-empty lines within REACH."""
    out = []
    for i in range(max(0, at - REACH), min(len(lines), at + REACH + 1)):
        s = lines[i].strip()
        if s and not claimed[i]:
            out.append((abs(i - at), s))
    return out
