"""kopf's index pre-population waits: with the patch, N waiters cost O(N) checks, not O(N^2)."""

from __future__ import annotations

import asyncio

from kopf._cogs.aiokits.aiotoggles import ToggleSet

from kafkaops.k8s import kopf_patches


async def checks_while_depleting(count: int) -> tuple[int, int]:
    toggles = ToggleSet(all)
    calls = 0
    original = toggles.is_on

    def counting_is_on() -> bool:
        nonlocal calls
        calls += 1
        return original()

    toggles.is_on = counting_is_on  # type: ignore[method-assign]
    items = [await toggles.make_toggle(False, name=str(i)) for i in range(count)]
    finished = 0

    async def worker() -> None:
        nonlocal finished
        await toggles.wait_for(True)
        finished += 1

    waiters = [asyncio.create_task(worker()) for _ in range(count)]
    await asyncio.sleep(0)
    for toggle in items:
        await toggles.drop_toggle(toggle)
        await asyncio.sleep(0)
    await asyncio.wait_for(asyncio.gather(*waiters), 10)
    return calls, finished


async def test_waiters_on_a_toggle_set_share_one_watcher() -> None:
    kopf_patches.apply()
    assert kopf_patches.applied()
    calls, finished = await checks_while_depleting(400)
    assert finished == 400, "every waiter is released once the set is on"
    assert calls < 4 * 400, f"{calls} checks for 400 waiters: the thundering herd is back"


async def test_a_set_already_on_returns_at_once() -> None:
    kopf_patches.apply()
    toggles = ToggleSet(all)
    await asyncio.wait_for(toggles.wait_for(True), 1)
