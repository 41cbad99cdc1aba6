"""The seeded chaos soak (bench/soak.py) in CI: a fixed seed and one random seed, each about a
minute of workload and faults plus a bounded quiet period, then every invariant.

The seed is printed; replay a failure with `bench/soak.py --seed N --duration 45`.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import soak  # noqa: E402

FIXED_SEED = 16
DURATION = 30.0  # seconds of workload and faults per seed; the quiet period is bounded separately


@pytest.mark.parametrize("seed", [FIXED_SEED, random.SystemRandom().randrange(10**6)], ids=["fixed", "random"])
def test_soak_keeps_every_invariant(seed: int) -> None:
    run = soak.Soak(seed, DURATION, quiet_timeout=50.0)
    print(f"soak seed {seed} (replay: bench/soak.py --seed {seed} --duration {DURATION:.0f})")
    found = []
    try:
        found = run.run()
        report = run.report(found)
        print(report)
    finally:
        run.stop()
    assert sum(run.faults.values()) >= 5, f"too few faults for a soak: {dict(run.faults)}"
    assert not found, report
