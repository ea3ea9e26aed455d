"""The source line of an instruction, from a code object's line table: 3.10's (PEP 626) and the
location table of 3.11 and later."""

from __future__ import annotations


def _varint(data: bytes, i: int) -> tuple[int, int]:
    b = data[i]
    i += 1
    value = b & 63
    shift = 0
    while b & 64:
        b = data[i]
        i += 1
        shift += 6
        value |= (b & 63) << shift
        if shift > 60:
            raise ValueError("varint too long")
    return value, i


def _svarint(data: bytes, i: int) -> tuple[int, int]:
    value, i = _varint(data, i)
    return (-(value >> 1) if value & 1 else value >> 1), i


def line_from_locations(table: bytes, firstlineno: int, unit: int) -> int | None:
    """Line of code unit `unit` from a 3.11+ location table (Objects/locations.md)."""
    if unit < 0:
        return firstlineno
    line = firstlineno
    start = 0
    i = 0
    n = len(table)
    while i < n:
        first = table[i]
        if not first & 0x80:
            return None  # not at an entry start: corrupt table
        code = (first >> 3) & 15
        length = (first & 7) + 1
        try:
            if code in (13, 14):
                delta, _ = _svarint(table, i + 1)
            elif code in (11, 12):
                delta = code - 10
            else:
                delta = 0
        except (IndexError, ValueError):
            return None
        line += delta
        if start <= unit < start + length:
            return None if code == 15 else line
        start += length
        i += 1
        while i < n and not table[i] & 0x80:
            i += 1
    return None


def line_from_pep626(table: bytes, firstlineno: int, byte_offset: int) -> int | None:
    """Line of a bytecode offset from a 3.10 co_linetable: (start delta, line delta) pairs."""
    if byte_offset < 0:
        return firstlineno
    line = firstlineno
    start = 0
    for i in range(0, len(table) - 1, 2):
        sdelta = table[i]
        ldelta = table[i + 1] - 256 if table[i + 1] > 127 else table[i + 1]
        end = start + sdelta
        if ldelta != -128:
            line += ldelta
        if start <= byte_offset < end:
            return None if ldelta == -128 else line
        start = end
    return None
