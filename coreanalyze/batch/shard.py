"""Splitting one batch across machines: `--shard I/N` takes the cores whose identity falls in
shard I of N. The split depends only on each file's content identity, so every machine computes
the same partition without talking to the others, whatever the order or names of the files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from coreanalyze.base.errors import BadInput

_SPEC = re.compile(r"^\s*(\d{1,6})\s*/\s*(\d{1,6})\s*$")


@dataclass(frozen=True)
class Shard:
    index: int
    count: int

    def owns(self, identity: str) -> bool:
        return shard_of(identity, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(identity: str, count: int) -> int:
    """Which of `count` shards owns this identity (a hex digest)."""
    return int(identity[:16], 16) % count


def parse_shard(text: str) -> Shard:
    m = _SPEC.match(text)
    if not m:
        raise BadInput(f"--shard {text!r}: expected I/N, e.g. 0/4")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1 or index >= count:
        raise BadInput(f"--shard {text}: I must be in 0..N-1 and N at least 1")
    return Shard(index, count)
