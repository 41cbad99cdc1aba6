"""The soak's findings, replayed by their seed and named for the fault that exposed each.
Replays are scenario replays (the same steps; the timing between processes varies), so each
checks only its own invariant. Deterministic regression tests of the fixes live beside the code
(tests/k8s/test_lifecycle.py, tests/e2e/test_operator_lifecycle.py)."""

from __future__ import annotations

import sys
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import soak  # noqa: E402


_REPLAYS: dict[int, list[soak.inv.Divergence]] = {}


def replay(seed: int, invariant: str, topic: str) -> None:
    if seed not in _REPLAYS:  # one replay per seed, shared by the tests of its bugs
        run = soak.Soak(seed, 30.0, quiet_timeout=30.0)
        try:
            _REPLAYS[seed] = run.run()
            print(run.report(_REPLAYS[seed]))
        finally:
            run.stop()
    mine = [d for d in _REPLAYS[seed] if d.invariant == invariant and d.resource == f"topic {topic}"]
    assert not mine, "\n".join(map(str, mine))


def test_operator_kill_then_unmanage_and_delete_keeps_the_topic() -> None:
    """Finding 1: t16-0006 created, the operator killed twice within 5 s, then annotated
    kafkaops.io/managed=false and deleted: it must not be deleted in Kafka (no DeleteTopics; the
    invariant used to flag a topic whose create was still in flight when it was released)."""
    replay(16, "retain-keeps-topic", "t16-0006")


