"""Stopping work early: the CLI's Ctrl-C sets an event; work in flight ends at the next safe point."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def until_stopped(work: Awaitable[T], stop: asyncio.Event) -> asyncio.Future[T]:
    """`work` as a task, returned once it is done or `stop` is set, whichever comes first."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    return task


async def unless_stopped(work: Awaitable[T], stop: asyncio.Event | None) -> T | None:
    """`work`'s result, or None when `stop` is set first (then `work` is cancelled)."""
    if stop is None:
        return await work
    task = await until_stopped(work, stop)
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return None
