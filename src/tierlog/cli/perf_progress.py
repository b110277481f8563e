"""A live progress bar for the perf commands, on stderr.

Shown only when stderr is a terminal and ``--json`` is off; otherwise every
call is a no-op, so the measuring loops can call `update` unconditionally.
Updates are rate-limited to keep the bar's cost out of the measurement.
"""

from __future__ import annotations

import sys
from typing import Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from tierlog.clock import monotonic_s

__all__ = ["LiveProgress"]

_UPDATE_EVERY_S = 0.1


class _RecordRateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.0f} records/s")


class LiveProgress:
    """Context manager around a rich Progress with one task counting records."""

    def __init__(self, description: str, total: int | None, enabled: bool) -> None:
        self._progress = None
        self._last_update = 0.0
        if enabled and sys.stderr.isatty():
            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                _RecordRateColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
                console=Console(stderr=True), transient=True,
            )
            self._task = self._progress.add_task(description, total=total)

    def __enter__(self) -> Self:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc_info) -> None:
        if self._progress is not None:
            self._progress.stop()

    def update(self, completed: int) -> None:
        if self._progress is None:
            return
        now = monotonic_s()
        if now - self._last_update >= _UPDATE_EVERY_S:
            self._last_update = now
            self._progress.update(self._task, completed=completed)
