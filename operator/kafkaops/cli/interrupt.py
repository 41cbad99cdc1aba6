"""Ctrl-C (SIGINT) and SIGTERM during `kafkaops apply`: leave things known.

The first signal sets `Interrupt.stop`: the engine sends no new step and no new batch of
partitions, the requests in flight answer (bounded by GRACE seconds), waiting for completion
ends, partitions already moving go on in Kafka (throttled; the throttle is recorded in the state
file, and the next apply finishes the moves and removes it). Then the outcomes are printed as
usual, with one summary line: applied / not applied / still moving and how to follow up, and
the command exits 130 (SIGINT) or 143 (SIGTERM). A second signal exits at once.

Before the apply starts (planning, the prompt) Ctrl-C is Python's KeyboardInterrupt: nothing
has been changed, and the command says so and exits 130.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import click

from kafkaops.reconcile.apply import INTERRUPTED
from kafkaops.reconcile.stopping import until_stopped
from kafkaops.reconcile.outcome import State

EXIT_SIGINT, EXIT_SIGTERM = 130, 143
GRACE = 15.0  # seconds the requests in flight get to answer after the first signal
SIGNAL_NAMES = {EXIT_SIGINT: "interrupted (Ctrl-C)", EXIT_SIGTERM: "terminated (SIGTERM)"}

T = TypeVar("T")


@contextlib.contextmanager
def exits_at_once(command: str) -> Iterator[None]:
    """While planning nothing has been changed: a signal exits at once (130/143) with one line.
    Waiting for the cancellation instead could hang on a broker that never answers the
    handshake, up to the connect timeout."""
    loop = asyncio.get_running_loop()

    def now(code: int) -> None:
        click.echo(f"kafkaops {command}: {SIGNAL_NAMES[code]} before anything was changed", err=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    for signum, code in ((signal.SIGINT, EXIT_SIGINT), (signal.SIGTERM, EXIT_SIGTERM)):
        loop.add_signal_handler(signum, now, code)
    try:
        yield
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


class Interrupt:
    """The apply's stop switch, flipped by the first SIGINT/SIGTERM while `installed()`."""

    def __init__(self, grace: float = GRACE) -> None:
        self.stop = asyncio.Event()
        self.code: int | None = None
        self.grace = grace

    @contextlib.contextmanager
    def installed(self) -> Iterator[Interrupt]:
        loop = asyncio.get_running_loop()
        for signum, code in ((signal.SIGINT, EXIT_SIGINT), (signal.SIGTERM, EXIT_SIGTERM)):
            loop.add_signal_handler(signum, self._on_signal, code)
        try:
            yield self
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)

    def _on_signal(self, code: int) -> None:
        if self.code is not None:
            click.echo("kafkaops: second interrupt: exiting at once; requests in flight may still take effect "
                       "(`kafkaops plan` shows where things stand)", err=True)
            sys.stderr.flush()
            sys.stdout.flush()
            os._exit(self.code)
        self.code = code
        self.stop.set()
        click.echo(f"kafkaops: {SIGNAL_NAMES[code]}: sending nothing new; waiting up to {self.grace:g}s for the "
                   "requests in flight, then reporting (interrupt again to exit at once)", err=True)

    async def bounded(self, work: Awaitable[T], on_timeout: Callable[[], T]) -> T:
        """`work`'s result; once interrupted, at most `grace` seconds more, then `on_timeout()`."""
        task = await until_stopped(work, self.stop)
        if task.done():
            return task.result()
        try:
            return await asyncio.wait_for(task, self.grace)
        except asyncio.TimeoutError:
            return on_timeout()


def summary_line(code: int, outcomes: list[tuple[str, State, str | None, str]], state_file: str | None) -> str:
    """The line after an interrupted apply: (cluster, state, problem reason, problem message) per resource."""
    applied = sum(1 for _, state, _, _ in outcomes if state is State.APPLIED)
    stopped = [(c, message) for c, _, reason, message in outcomes if reason == INTERRUPTED]
    moving = sum(1 for _, message in stopped if "still moving" in message and " 0 still moving" not in message)
    parts = [f"{applied} applied", f"{len(stopped)} not applied or not finished"]
    if moving:
        parts.append(f"{moving} topic(s) with partitions still moving in the cluster")
    where = f"what was applied is recorded in {state_file}" if state_file else "no state file (--no-state)"
    return (f"Apply {SIGNAL_NAMES[code]}: {', '.join(parts)}; {where}. Run the same `kafkaops apply` again to "
            "finish (`kafkaops plan` shows what is left).")
