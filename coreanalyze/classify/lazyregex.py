"""A regular expression compiled when it is first used.

The built-in rules hold some 650 patterns; compiling them all (Python's regex compiler is
written in Python) costs a core's analysis about 0.15 s, while one analysis uses a fraction of
them (the pasted-text rules never run on a core, most frame rules never reach a culprit's
category). The built-in patterns are checked by the unit tests; a user's rules file is still
compiled whole when it is loaded, so that its bad regex is reported there.
"""

from __future__ import annotations

import re
import threading
from typing import Any

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
