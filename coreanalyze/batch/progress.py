"""A progress bar on a terminal (click's), nothing otherwise: logs get the final summary only."""

from __future__ import annotations

import sys
from typing import IO

import click

from coreanalyze.batch.store import CoreRecord
from coreanalyze.render.view import one_line


class Progress:
    def __init__(self, total: int, already_done: int, enabled: bool, stream: IO[str] | None = None):
        self._bar = None
        if not enabled or total <= 0:
            return
        self._bar = click.progressbar(
            length=total,
            label="Analyzing cores",
            file=stream or sys.stderr,
            show_pos=True,
            show_eta=True,
            item_show_func=lambda name: name,
        )
        self._bar.__enter__()
        if already_done:
            self._bar.update(already_done)

    def advance(self, record: CoreRecord) -> None:
        if self._bar is not None:
            self._bar.update(1, current_item=f"{one_line(record.name, 40)} {record.status}")

    def close(self) -> None:
        if self._bar is not None:
            bar, self._bar = self._bar, None
            bar.__exit__(None, None, None)
