"""Progress displays of `kafkaops apply`: resources sent, and partitions moving (replica changes)."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from kafkaops.reconcile.actions import ResourcePlan

# More resources with steps than this get a progress display while they are applied.
PROGRESS_THRESHOLD = 20


class ProgressDisplay:
    """Counts resources as the engine finishes sending their steps.

    A rich bar on a terminal; elsewhere (CI logs) one line per 10% so long runs show life
    without flooding the log. Nothing at all for small runs.
    """

    def __init__(self, total: int, with_steps: int) -> None:
        self.total = total
        self.done = 0
        self._reported = 0
        self._bar: Any = None
        self._task: Any = None
        self.enabled = with_steps > PROGRESS_THRESHOLD
        self._tty = sys.stderr.isatty()

    def __enter__(self) -> ProgressDisplay:
        if self.enabled and self._tty:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("applying", total=self.total)
        return self

    def __call__(self, _resource: ResourcePlan) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.advance(self._task)
            if self.done == self.total:
                self._bar.update(self._task, description="waiting for Kafka to complete the changes")
            return
        tenth = self.done * 10 // max(self.total, 1)
        if tenth > self._reported:
            self._reported = tenth
            click.echo(f"progress: {self.done}/{self.total} resources sent ({tenth * 10}%)", err=True)
            if self.done == self.total:
                click.echo("progress: waiting for Kafka to complete the changes", err=True)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


class ReassignmentDisplay:
    """Partition moves (replication-factor or assignment changes) can take hours: a rich bar on a
    terminal, else a line like "moving: 12/48 partitions (31%)" each time another 10% is done (and
    at most every 30 s otherwise), so CI logs show progress without flooding."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self._tty = sys.stderr.isatty()
        self._bar: Any = None
        self._task: Any = None
        self._reported = -1
        self._last = 0.0

    def __call__(self, progress: Any) -> None:
        if self._tty:
            self._draw(progress)
        else:
            self._line(progress)
        if progress.finished and self._bar is not None:
            self._bar.stop()
            self._bar = None

    def _draw(self, progress: Any) -> None:
        if self._bar is None and not progress.finished:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                                 TimeRemainingColumn(), console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task(f"{self.cluster}: moving partitions", total=100)
        if self._bar is not None:
            self._bar.update(self._task, completed=progress.percent,
                             description=f"{self.cluster}: {progress.message or 'moving partitions'}")

    def _line(self, progress: Any) -> None:
        now = time.monotonic()
        step = progress.percent // 10
        if progress.finished or step > self._reported or now - self._last >= 30:
            self._reported, self._last = step, now
            summary = progress.message or (f"{progress.partitions_done}/{progress.partitions_total} partitions moved "
                                           f"({progress.percent}%)")
            click.echo(f"moving ({self.cluster}): {summary}", err=True)

