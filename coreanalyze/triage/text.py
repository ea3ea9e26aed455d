"""Turn pasted text into clean lines: what a ticket, a terminal or an e-mail wrapped around
the crash output is removed, so that each parser sees the lines the crashing program printed.

Removed: ANSI colour/cursor escapes, CR/CRLF line ends, Markdown code fences, e-mail
quoting (`> `), gdb's `(gdb) ` prompt, per-line prefixes of launchers and CI logs
(`[rank0]: `, `[1,0]<stderr>:`, `(pid=123) `, GitHub Actions timestamps) and HTML entities of text copied
from a rendered page. All of it in one pass of simple, linear patterns. Hard wrapping and frame
numbers turned into issue links are undone first (repair.py).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from coreanalyze.triage import limits
from coreanalyze.triage.repair import repair

# CSI sequences (colours, cursor moves), OSC sequences (titles, hyperlinks), 2-byte escapes.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
# Other control characters a terminal capture can leave (backspaces, bells, NULs).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# E-mail / Markdown quoting: "> ", ">> ", "> > ".
_QUOTING = re.compile(r"[ \t]*(?:>[ \t]?)+")
_FENCE = re.compile(r"[ \t]*(?:```|~~~)")
# Prefixes that launchers and log collectors put in front of every line of a child's output.
_LINE_PREFIXES = re.compile(
    r"(?:"
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z[ \t]"  # GitHub Actions / Docker timestamps
    r"|\[(?:rank|default)\d+\]:[ \t]?"  # torchrun
    r"|\[\d{1,6},\d{1,6}\]<std(?:out|err)>:"  # mpirun --tag-output "[1,4]<stderr>:"
    r"|\d{1,4}:[ \t]"  # "0: " rank prefixes of mpirun/torchrun
    r"|(?:\((?:[\w.-]+ ){0,2}pid=\d+(?:, ip=[\d.]+)?\)[ \t]*)+"  # Ray "(raylet pid=1) "
    r")"
)
_GDB_PROMPT = re.compile(r"[ \t]*\(gdb\)[ \t]?")


@dataclass
class CleanText:
    lines: list[str]
    warnings: list[str] = field(default_factory=list)


def clean(text: str) -> CleanText:
    warnings: list[str] = []
    if len(text) > limits.MAX_TEXT_CHARS:
        warnings.append(
            f"the text has {len(text)} characters; only the first {limits.MAX_TEXT_CHARS} were read"
        )
        text = text[: limits.MAX_TEXT_CHARS]
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    # A page copied from a rendered ticket: "&lt;signal handler called&gt;".
    if "&lt;" in text or "&gt;" in text or "&amp;" in text or "&quot;" in text:
        text = html.unescape(text)
    if _CONTROL.search(text):
        text = _CONTROL.sub("", text)
    lines: list[str] = []
    cut = 0
    # splitlines also ends lines at a lone CR (progress bars) and at CRLF.
    raw, repaired = repair(text.splitlines())
    warnings.extend(repaired)
    for line in raw:
        if len(line) > limits.MAX_LINE_CHARS:
            line = line[: limits.MAX_LINE_CHARS]
            cut += 1
        lines.append(_clean_line(line))
    if cut:
        warnings.append(f"{cut} line(s) longer than {limits.MAX_LINE_CHARS} characters were cut")
    return CleanText(lines, warnings)


def _clean_line(line: str) -> str:
    if not line:
        return line
    first = line.lstrip(" \t")[:1]
    if first == ">":
        line = line[_QUOTING.match(line).end() :]
        first = line.lstrip(" \t")[:1]
    if first in ("`", "~") and _FENCE.match(line):
        return ""
    if first == "`":
        # A block pasted inside single backticks: "`Thread 20 "python" received signal ..."
        line = line.lstrip(" \t")[1:]
    if line.endswith("`") and not line.endswith("``"):
        line = line[:-1]
    if first.isdigit() or first in ("[", "("):
        m = _GDB_PROMPT.match(line) or _LINE_PREFIXES.match(line)
        if m:
            line = line[m.end() :]
    return line.rstrip()
