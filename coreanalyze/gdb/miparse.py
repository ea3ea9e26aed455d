"""GDB/MI output lines into records, as pygdbmi's parse_response gives them, faster.

A core makes gdb print a few thousand MI lines (a `=library-loaded` notification per library,
a console line per mapping, frames); pygdbmi's parser reads them a character at a time with
debug logging on every step, a few hundredths of a second per core. Here a line that follows
MI's grammar exactly is parsed with regular expressions into the same dict pygdbmi builds;
anything else (a malformed line, an unknown escape) is handed to pygdbmi itself, so that both
its answers and its errors stay the same (a test compares the two on real sessions' lines).
"""

from __future__ import annotations

import re
from typing import Any

from pygdbmi import gdbmiparser

# The record patterns of pygdbmi's parse_response, in its order.
_RESULT = re.compile(r"^(?P<token>\d+)?\^(?P<message>\S+?)(?P<payload>,.*)?$")
_NOTIFY = re.compile(r"^(?P<token>\d+)?[*=](?P<message>\S+?)(?P<payload>,.*)?$")
_STREAMS = {"~": "console", "&": "log", "@": "target"}

# MI values: c-strings, tuples {...}, lists [...]; results are key=value.
# (Strings as "[^"\\]*(?:\\.[^"\\]*)*": runs of plain characters, which the regex engine
# takes many at a time.)
_STRING = r'"([^"\\]*(?:\\.[^"\\]*)*)"'
_TOKEN = re.compile(_STRING + r'|([A-Za-z_][\w-]*)=|([{}\[\],])', re.DOTALL)
_ALL_TOKENS = re.compile(r'(?:"[^"\\]*(?:\\.[^"\\]*)*"|[A-Za-z_][\w-]*=|[{}\[\],])*', re.DOTALL)
_STRING_BODY = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
_ESCAPE = re.compile(r"\\(?:([0-7]{3}(?:\\[0-7]{3})*)|(.))")
_SIMPLE_ESCAPES = {"'": "'", "\\": "\\", "a": "\a", "b": "\b", "e": "\033", "f": "\f", "n": "\n", "r": "\r", "t": "\t", '"': '"'}


class _NotPlain(Exception):
    """The line is not plain MI: pygdbmi decides what it is."""


def parse_response(line: str) -> dict[str, Any]:
    """The record of one line of gdb's MI output (pygdbmi's parse_response)."""
    try:
        return _parse(line)
    except (_NotPlain, RecursionError):
        return gdbmiparser.parse_response(line)


def _parse(line: str) -> dict[str, Any]:
    kind = _STREAMS.get(line[:1])
    if kind is not None:
        if line[1:2] != '"' or not line.endswith('"') or len(line) < 3:
            raise _NotPlain
        body = line[2:-1]
        if _STRING_BODY.fullmatch(body) is None:
            raise _NotPlain  # an unescaped quote inside
        return {"type": kind, "message": None, "payload": _unescape(body)}
    match = _RESULT.match(line)
    if match is not None:
        return {"type": "result", "message": match["message"], "payload": _payload(match), "token": _token(match)}
    match = _NOTIFY.match(line)
    if match is not None:
        return {"type": "notify", "message": match["message"].strip(), "payload": _payload(match), "token": _token(match)}
    raise _NotPlain


def _token(match: re.Match[str]) -> int | None:
    return int(match["token"]) if match["token"] is not None else None


def _payload(match: re.Match[str]) -> dict[str, Any] | None:
    text = match["payload"]
    if text is None:
        return None
    tokens = _tokens(text, 1)
    results, end = _results(tokens, 0, closing=None)
    if end != len(tokens):
        raise _NotPlain
    return results


def _tokens(text: str, start: int) -> list[tuple[str, str, str]]:
    """(string body, key, punctuation) triples, one of them set; the whole text must be tokens."""
    if _ALL_TOKENS.fullmatch(text, start) is None:
        raise _NotPlain
    return _TOKEN.findall(text, start)


def _results(tokens: list[tuple[str, str, str]], i: int, closing: str | None) -> tuple[dict[str, Any], int]:
    """key=value (, key=value)* up to `closing` (None: the end); duplicate keys as pygdbmi merges them."""
    obj: dict[str, Any] = {}
    if closing is not None and i < len(tokens) and tokens[i][2] == closing:
        return obj, i + 1
    while True:
        if i >= len(tokens) or not tokens[i][1]:
            raise _NotPlain
        key = tokens[i][1]
        value, i = _value(tokens, i + 1)
        if key in obj:
            if isinstance(obj[key], list):
                obj[key].append(value)
            else:
                obj[key] = [obj[key], value]
        else:
            obj[key] = value
        if i >= len(tokens):
            if closing is None:
                return obj, i
            raise _NotPlain
        punctuation = tokens[i][2]
        if punctuation == ",":
            i += 1
            continue
        if closing is not None and punctuation == closing:
            return obj, i + 1
        raise _NotPlain


def _value(tokens: list[tuple[str, str, str]], i: int) -> tuple[Any, int]:
    if i >= len(tokens):
        raise _NotPlain
    body, key, punctuation = tokens[i]
    if not key and not punctuation:  # a string (perhaps empty)
        return (_unescape(body) if "\\" in body else body), i + 1
    if punctuation == "{":
        return _results(tokens, i + 1, closing="}")
    if punctuation == "[":
        return _list(tokens, i + 1)
    raise _NotPlain


def _list(tokens: list[tuple[str, str, str]], i: int) -> tuple[list[Any], int]:
    """[value, ...] or [key=value, ...]; pygdbmi keeps the values only."""
    out: list[Any] = []
    count = len(tokens)
    if i < count and tokens[i][2] == "]":
        return out, i + 1
    while True:
        if i < count and tokens[i][1]:
            i += 1
        value, i = _value(tokens, i)
        out.append(value)
        punctuation = tokens[i][2] if i < count else ""
        if punctuation == ",":
            i += 1
            continue
        if punctuation == "]":
            return out, i + 1
        raise _NotPlain


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    if text.endswith("\\n") and "\\" not in text[:-2]:
        return text[:-2] + "\n"  # the usual console line: one escape, its line break
    return _ESCAPE.sub(_unescaped, text)


def _unescaped(m: re.Match[str]) -> str:
    octal, char = m.group(1), m.group(2)
    if octal is not None:
        digits = octal.replace("\\", "")
        values = [int(digits[j : j + 3], 8) for j in range(0, len(digits), 3)]
        if any(v > 255 for v in values):
            raise _NotPlain
        try:
            return bytes(values).decode("utf-8")
        except UnicodeDecodeError:
            return "\\" + octal
    if char is None or char not in _SIMPLE_ESCAPES:
        raise _NotPlain
    return _SIMPLE_ESCAPES[char]
