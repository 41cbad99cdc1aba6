"""Batcher windows: many callers, one call per window, each caller its own result."""

import asyncio

import pytest

from kafkaops.kafka.batcher import _Lane
from kafkaops.kafka.errors import KafkaError, UnsupportedFeature
from kafkaops.kafka.models import ItemResult


class RecordingSendDouble:
    """A lane's send function that answers like a broker and records each batch."""

    def __init__(self, delay: float = 0.0, fail_keys=()):
        self.batches: list[list[tuple[str, int]]] = []
        self.delay = delay
        self.fail_keys = set(fail_keys)

    async def __call__(self, items):
        self.batches.append(list(items))
        await asyncio.sleep(self.delay)
        out = {}
        for key, value in items:
            if key in self.fail_keys:
                out[key] = ItemResult(None, KafkaError.from_code(17, f"bad {key}"))
            else:
                out[key] = ItemResult(value * 10)
        return out


async def test_concurrent_callers_share_one_batch_and_get_their_own_results():
    send = RecordingSendDouble(fail_keys={"k3"})
    lane = _Lane("test", send, lambda v: 1, linger=0.02, budget=10_000)
    results = await asyncio.gather(*(lane.submit(f"k{i}", i) for i in range(1000)))
    assert len(send.batches) == 1 and len(send.batches[0]) == 1000
    assert results[5] == ItemResult(50)
    assert results[3].error.name == "INVALID_TOPIC_EXCEPTION" and results[4].ok


async def test_budget_flushes_before_the_linger_expires():
    send = RecordingSendDouble()
    lane = _Lane("test", send, lambda v: 10, linger=30.0, budget=100)
    results = await asyncio.wait_for(asyncio.gather(*(lane.submit(f"k{i}", i) for i in range(30))), timeout=5)
    assert [len(b) for b in send.batches] == [10, 10, 10]
    assert all(r.ok for r in results)


async def test_a_window_never_holds_more_than_the_budget():
    send = RecordingSendDouble()
    lane = _Lane("test", send, lambda v: 6, linger=0.05, budget=100)  # 16 items fit, a 17th would not
    results = await asyncio.wait_for(lane.submit_many((f"k{i}", i) for i in range(40)), timeout=5)
    assert [len(b) for b in send.batches] == [16, 16, 8]
    assert [r.value for r in results] == [i * 10 for i in range(40)]


async def test_duplicate_key_in_a_window_last_wins_and_both_callers_see_it():
    send = RecordingSendDouble()
    lane = _Lane("test", send, lambda v: 1, linger=0.01, budget=10_000)
    first, second = await asyncio.gather(lane.submit("t", 1), lane.submit("t", 2))
    assert send.batches == [[("t", 2)]]
    assert first == second == ItemResult(20)


async def test_a_key_in_flight_waits_for_the_next_window():
    send = RecordingSendDouble(delay=0.05)
    lane = _Lane("test", send, lambda v: 1, linger=0.01, budget=10_000)
    first = asyncio.ensure_future(lane.submit("t", 1))
    await asyncio.sleep(0.03)  # first batch is now in flight
    second = asyncio.ensure_future(lane.submit("t", 2))
    other = asyncio.ensure_future(lane.submit("u", 3))
    await asyncio.gather(first, second, other)
    assert send.batches[0] == [("t", 1)]
    assert ("u", 3) in send.batches[1] and ("t", 2) not in send.batches[1]
    assert send.batches[2] == [("t", 2)]
    assert second.result() == ItemResult(20)


async def test_a_failed_call_reaches_every_caller():
    async def unsupported(items):
        raise UnsupportedFeature("ElectLeaders", 43, 1, None, (0, 2))

    lane = _Lane("test", unsupported, lambda v: 1, linger=0.01, budget=10_000)
    results = await asyncio.gather(lane.submit("a", 1), lane.submit("b", 2), return_exceptions=True)
    assert all(isinstance(r, UnsupportedFeature) for r in results)


async def test_a_result_missing_from_the_answer_is_an_error_not_a_drop():
    async def forgetful(items):
        return {}

    lane = _Lane("test", forgetful, lambda v: 1, linger=0.0, budget=10_000)
    result = await lane.submit("a", 1)
    assert result.error is not None and "no result for a" in result.error.message


async def test_a_window_stays_open_while_items_trickle_in_up_to_linger_max():
    send = RecordingSendDouble()
    lane = _Lane("test", send, lambda v: 1, linger=0.03, budget=10_000, linger_max=0.3)
    loop = asyncio.get_running_loop()
    started = loop.time()
    waiting = []
    for i in range(20):  # one item every 10 ms: never a 30 ms gap
        waiting.append(asyncio.ensure_future(lane.submit(f"k{i}", i)))
        await asyncio.sleep(0.01)
    await asyncio.gather(*waiting)
    assert len(send.batches) == 1 and len(send.batches[0]) == 20
    assert loop.time() - started < 0.3 + 0.1


async def test_linger_max_bounds_the_window():
    send = RecordingSendDouble()
    lane = _Lane("test", send, lambda v: 1, linger=0.03, budget=10_000, linger_max=0.1)
    waiting = []
    for i in range(30):  # 300 ms of trickle: windows close at 100 ms
        waiting.append(asyncio.ensure_future(lane.submit(f"k{i}", i)))
        await asyncio.sleep(0.01)
    await asyncio.gather(*waiting)
    assert 2 <= len(send.batches) <= 5 and sum(len(b) for b in send.batches) == 30


async def test_a_lone_item_waits_only_linger():
    send = RecordingSendDouble()
    lane = _Lane("test", send, lambda v: 1, linger=0.02, budget=10_000, linger_max=5.0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await lane.submit("only", 1)
    assert loop.time() - started < 1.0  # not linger_max


async def test_submit_many_joins_the_window_of_single_callers_and_answers_in_order():
    send = RecordingSendDouble(fail_keys={"m7"})
    lane = _Lane("test", send, lambda v: 1, linger=0.02, budget=10_000)
    single, many = await asyncio.gather(lane.submit("s", 1), lane.submit_many((f"m{i}", i) for i in range(10)))
    assert len(send.batches) == 1 and len(send.batches[0]) == 11  # one request for both callers
    assert single == ItemResult(10)
    assert [r.value for r in many[:3]] == [0, 10, 20] and many[7].error.name == "INVALID_TOPIC_EXCEPTION"


async def test_submit_many_over_the_budget_is_split_like_single_submissions():
    send = RecordingSendDouble()
    lane = _Lane("test", send, lambda v: 10, linger=30.0, budget=100)
    results = await asyncio.wait_for(lane.submit_many((f"k{i}", i) for i in range(30)), timeout=5)
    assert [len(b) for b in send.batches] == [10, 10, 10]
    assert [r.value for r in results] == [i * 10 for i in range(30)]


def test_submit_many_raises_a_failed_call_and_leaves_no_unseen_exception():
    import gc

    async def unsupported(items):
        raise UnsupportedFeature("ElectLeaders", 43, 1, None, (0, 2))

    unseen: list[dict] = []
    raised: list[BaseException] = []

    async def scenario():
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: unseen.append(context))
        lane = _Lane("test", unsupported, lambda v: 1, linger=0.01, budget=10_000)
        try:
            await lane.submit_many([("a", 1), ("b", 2), ("c", 3)])
        except UnsupportedFeature as exc:
            raised.append(type(exc))
        await asyncio.sleep(0)

    loop = asyncio.new_event_loop()  # its own loop, so that everything it held is collected below
    try:
        loop.run_until_complete(scenario())
    finally:
        loop.close()
    gc.collect()
    assert raised == [UnsupportedFeature]
    assert [c["message"] for c in unseen] == []


async def test_linger_zero_sends_what_one_loop_pass_submitted_as_one_request():
    send = RecordingSendDouble()
    lane = _Lane("test", send, lambda v: 1, linger=0.0, budget=10_000, linger_max=0.5)
    results = await asyncio.gather(*(lane.submit(f"k{i}", i) for i in range(500)))
    assert [len(b) for b in send.batches] == [500]
    later = await lane.submit("late", 1)  # a later pass: its own request, sent without waiting
    assert len(send.batches) == 2 and later.ok and all(r.ok for r in results)


async def test_submit_each_answers_batch_by_batch_in_order():
    release = asyncio.Event()
    answered: list[int] = []

    async def send(items):
        if items[0][0] != "k0":  # the second batch answers only when released
            await release.wait()
        return {key: ItemResult(value) for key, value in items}

    lane = _Lane("test", send, lambda v: 10, linger=0.0, budget=50)
    task = asyncio.ensure_future(lane.submit_each(((f"k{i}", i) for i in range(8)), answered.append))
    for _ in range(50):
        if answered:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.02)
    assert answered == [0, 1, 2, 3, 4]  # the first batch (budget 50 = 5 items), before the second answers
    release.set()
    results = await asyncio.wait_for(task, timeout=5)
    assert answered == list(range(8)) and [r.value for r in results] == list(range(8))


async def _until_sent(send: RecordingSendDouble) -> None:
    while not send.batches:
        await asyncio.sleep(0.005)


async def test_a_batch_whose_items_fail_midway_still_sends_those_queued_before():
    """A batch is queued in one pass and its window scheduled after the last item: an item that
    raises (the caller's generator) must not leave the earlier ones queued with no window."""
    send = RecordingSendDouble()
    lane = _Lane("test", send, lambda v: 1, linger=0.01, budget=10_000)

    def items():
        yield "a", 1
        yield "b", 2
        raise RuntimeError("the caller's generator broke")

    with pytest.raises(RuntimeError):
        await lane.submit_many(items())
    await asyncio.wait_for(_until_sent(send), timeout=5)
    assert send.batches == [[("a", 1), ("b", 2)]]


async def test_an_item_that_cannot_be_costed_leaves_the_queued_one_of_its_key():
    def cost(value: int) -> int:
        if value < 0:
            raise ValueError("no size for a negative value")
        return 1

    send = RecordingSendDouble()
    lane = _Lane("test", send, cost, linger=0.01, budget=10_000)
    first = asyncio.ensure_future(lane.submit("k", 1))
    await asyncio.sleep(0)  # queued
    with pytest.raises(ValueError):
        await lane.submit("k", -1)
    assert await asyncio.wait_for(first, timeout=5) == ItemResult(10)
