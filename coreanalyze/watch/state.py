"""What `watch` remembers across restarts besides the records: the cores handed to the analysis
that have no record yet, and how often. A core that was in hand each time the watcher itself
died (the OOM killer took the service, the machine rebooted) is recorded as failed after
MAX_ATTEMPTS instead of being tried forever. A record ends a core's entry; so does a clean stop
(SIGTERM), which did not count against the core.

OUT/watch-state.json, written atomically and synced on every change (a few per core).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coreanalyze.base.atomicfile import write_atomically
from coreanalyze.base.errors import AnalysisFailed

STATE_FILE = "watch-state.json"
STATE_SCHEMA = "coreanalyze-watch-state/1"
MAX_ATTEMPTS = 2
MAX_STATE_BYTES = 16 << 20
MAX_ENTRIES = 100_000


class WatchState:
    def __init__(self, out: Path):
        self.path = Path(out) / STATE_FILE
        self.attempts: dict[str, dict[str, Any]] = {}  # file identity -> {path, count}
        self.this_run: set[str] = set()  # started since this process began, no record yet
        self._load()

    def _load(self) -> None:
        try:
            if self.path.stat().st_size > MAX_STATE_BYTES:
                return
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            return  # none yet, or damaged: every core gets its attempts afresh
        if not isinstance(data, dict) or data.get("schema") != STATE_SCHEMA or not isinstance(data.get("attempts"), dict):
            return
        for identity, entry in list(data["attempts"].items())[:MAX_ENTRIES]:
            if isinstance(entry, dict) and isinstance(entry.get("count"), int) and isinstance(entry.get("path"), str):
                self.attempts[identity] = {"path": entry["path"], "count": entry["count"]}

    def _save(self) -> None:
        text = json.dumps({"schema": STATE_SCHEMA, "attempts": self.attempts}, indent=1, sort_keys=True) + "\n"
        try:
            write_atomically(self.path, text, durable=True)
        except OSError as e:
            raise AnalysisFailed(f"cannot write {self.path}: {e.strerror or e}") from None

    def count(self, identity: str) -> int:
        entry = self.attempts.get(identity)
        return entry["count"] if entry else 0

    def started(self, identity: str, path: str) -> None:
        self.attempts[identity] = {"path": path, "count": self.count(identity) + 1}
        self.this_run.add(identity)
        self._save()

    def finished(self, identity: str) -> None:
        self.this_run.discard(identity)
        if self.attempts.pop(identity, None) is not None:
            self._save()

    def interrupted(self) -> None:
        """A clean stop: the cores in hand were not the analysis's end, and are left for the
        next start as if never tried in this run."""
        changed = False
        for identity in self.this_run:
            entry = self.attempts.get(identity)
            if entry is None:
                continue
            changed = True
            if entry["count"] <= 1:
                del self.attempts[identity]
            else:
                entry["count"] -= 1
        self.this_run.clear()
        if changed:
            self._save()
