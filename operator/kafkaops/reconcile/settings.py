"""`EngineSettings`: what only the reconcile engine uses (completion polling, partition reassignment).

The admin client's own knobs (timeouts of one request, retries, linger, budgets, security) are in
`kafkaops.kafka.ClientSettings`. People configure both through one flat set of names (the CLI's
flags, the operator's `OperatorSettings.client_overrides`): `EngineSettings.split` takes the engine's
names out of such a mapping and leaves the client's, so `wait_timeout`, `wait_poll_min` and
`wait_poll_max` keep the names they had when they lived in ClientSettings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields

from kafkaops.frozen import frozen
from kafkaops.reconcile.reassign.plan import ReassignmentSettings


@frozen
class EngineSettings:
    """Seconds. Completion polling backs off from `wait_poll_min` to `wait_poll_max`; past
    `wait_timeout` what has not read back is a retriable WaitTimeout. `reassignment`: partitions in
    flight, throttle, timeout of replica changes (None: the defaults, progress polled every
    `wait_poll_max`)."""

    wait_timeout: float = 120.0
    wait_poll_min: float = 0.05
    wait_poll_max: float = 2.0
    reassignment: ReassignmentSettings | None = None

    def __post_init__(self) -> None:
        if self.wait_timeout <= 0:
            raise ValueError(f"wait_timeout must be positive, got {self.wait_timeout:g}")
        if self.wait_poll_min <= 0 or self.wait_poll_max < self.wait_poll_min:
            raise ValueError(f"wait_poll_min ({self.wait_poll_min:g}) must be positive and at most wait_poll_max "
                             f"({self.wait_poll_max:g})")

    @property
    def reassignment_settings(self) -> ReassignmentSettings:
        return self.reassignment or ReassignmentSettings(poll_interval=self.wait_poll_max)

    @classmethod
    def split(cls, settings: Mapping[str, object]) -> tuple[EngineSettings, dict[str, object]]:
        """(the engine's settings, the rest: ClientSettings overrides) of one flat mapping of names."""
        names = {f.name for f in fields(cls)}
        engine = {k: v for k, v in settings.items() if k in names}
        return cls(**engine), {k: v for k, v in settings.items() if k not in names}  # type: ignore[arg-type]
