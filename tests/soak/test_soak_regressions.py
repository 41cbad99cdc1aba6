"""The bugs the soak found, replayed by their seed, each a strict xfail until the operator is
fixed (operator/kafkaops/k8s/ is the lead's): when the fix lands the xfail turns red and the
marker comes off. Named for the fault that exposes each. Replays are scenario replays (the same
steps; the timing between processes varies), so each checks only its own invariant."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

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


@pytest.mark.xfail(strict=True, reason="operator_kill + unmanage: t16-0006 is created, the operator is killed "
                                       "(kill -9) twice within 5 s, then annotated kafkaops.io/managed=false and "
                                       "deleted 2.5 s after the second restart: the topic is deleted in Kafka "
                                       "under its Delete policy instead of being released")
def test_operator_kill_then_unmanage_and_delete_keeps_the_topic() -> None:
    replay(16, "retain-keeps-topic", "t16-0006")


