"""A regular expression compiled when it is first used.

The built-in rules hold some 650 patterns; compiling them all (Python's regex compiler is
written in Python) costs a core's analysis about 0.15 s, while one analysis uses a fraction of
them (the pasted-text rules never run on a core, most frame rules never reach a culprit's
category). The built-in patterns are checked by the unit tests; a user's rules file is still
compiled whole when it is loaded, so that its bad regex is reported there.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from typing import Any, Callable, Iterator

_lock = threading.Lock()


class LazyPattern:
    """Stands for re.compile(pattern): the same methods, compiled on the first call."""

    __slots__ = ("pattern", "_compiled")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: re.Pattern[str] | None = None

    def compiled(self) -> re.Pattern[str]:
        found = self._compiled
        if found is None:
            with _lock:  # rules are read in the background while frames are classified
                if self._compiled is None:
                    self._compiled = re.compile(self.pattern)
                found = self._compiled
        return found

    def search(self, *args: Any) -> re.Match[str] | None:
        return self.compiled().search(*args)

    def match(self, *args: Any) -> re.Match[str] | None:
        return self.compiled().match(*args)

    def fullmatch(self, *args: Any) -> re.Match[str] | None:
        return self.compiled().fullmatch(*args)

    def __getattr__(self, name: str) -> Any:
        # finditer, sub, groupindex, ...: whatever a compiled pattern has.
        return getattr(self.compiled(), name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyPattern):
            return self.pattern == other.pattern
        if isinstance(other, re.Pattern):
            return other.flags == re.UNICODE and other.pattern == self.pattern
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __reduce__(self) -> tuple[Any, ...]:
        return (LazyPattern, (self.pattern,))

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r})"


def compile_ahead(holder: Any, go_on: Callable[[], bool]) -> int:
    """Compile the lazy patterns in `holder` (dataclasses, lists, tuples, dicts, walked in
    order) while go_on() says so before each; how many were compiled. For a thread that has the
    interpreter to itself while the main thread waits for the debugger: a classification's
    patterns are then ready when it starts."""
    compiled = 0
    for pattern in _lazy_patterns(holder):
        if pattern._compiled is None:
            if not go_on():
                break
            pattern.compiled()
            compiled += 1
    return compiled


def _lazy_patterns(value: Any) -> Iterator[LazyPattern]:
    if isinstance(value, LazyPattern):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _lazy_patterns(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _lazy_patterns(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _lazy_patterns(getattr(value, f.name))
