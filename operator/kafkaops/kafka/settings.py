"""The one settings object of the Kafka client."""

from __future__ import annotations

from dataclasses import field, replace
from pathlib import Path

from kafkaops.frozen import frozen

from .security import SecuritySettings, load_properties


def parse_bootstrap(servers: str | list[str] | tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    """'h1:9092,h2:9092' (or a list) -> ((h1, 9092), (h2, 9092)); clear errors."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    parsed: list[tuple[str, int]] = []
    for raw in items:
        entry = raw.strip()
        if not entry:
            continue
        host, sep, port = entry.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"bootstrap server {entry!r} is not HOST:PORT")
        parsed.append((host.strip("[]"), int(port)))
    if not parsed:
        raise ValueError("no bootstrap servers given")
    return tuple(parsed)


@frozen
class ClientSettings:
    """Every knob of the admin client, with production defaults.

    Timeouts are seconds. ``kafka_timeout_ms`` is the timeout the brokers are
    asked to wait for the controller (the ``timeout_ms`` field of admin
    requests); ``request_timeout`` is how long the client waits for a reply.
    """

    bootstrap: tuple[tuple[str, int], ...]
    security: SecuritySettings = field(default_factory=SecuritySettings)
    client_id: str = "kafkaops"
    connect_timeout: float = 10.0
    request_timeout: float = 40.0
    kafka_timeout_ms: int = 30_000
    max_in_flight: int = 32
    # Retries of retriable errors (NOT_CONTROLLER, timeouts, network, throttling).
    retry_attempts: int = 8
    retry_backoff: float = 0.1
    retry_backoff_max: float = 5.0
    retry_deadline: float = 120.0
    connect_attempts: int = 3
    # Seconds spent retrying a cluster no broker of which can be reached (refused, timed out) before
    # the call fails with ClusterUnreachable; None: only the attempt counts bound it. The CLI sets a
    # small one (fail fast); the connect timeout also bounds the ApiVersions handshake.
    connect_retry_budget: float | None = None
    # Request sizing (KRaft rejects requests writing more than 10,000 records).
    max_records_per_request: int = 10_000
    # The Batcher.
    linger: float = 0.05
    linger_max: float = 0.5  # a window stays open while items keep coming, up to this long
    batch_max_records: int = 10_000
    # (The reconcile engine's completion polling, wait_timeout / wait_poll_min / wait_poll_max, is
    # kafkaops.reconcile.settings.EngineSettings: only the engine uses it.)

    def __post_init__(self) -> None:
        if not self.bootstrap:
            raise ValueError("no bootstrap servers given")
        if self.linger < 0 or self.linger > 1.0:
            raise ValueError("linger must be between 0 and 1 second")
        if self.linger_max < 0 or self.linger_max > 5.0:
            raise ValueError("linger_max must be between 0 and 5 seconds")
        if self.max_records_per_request < 1 or self.batch_max_records < 1:
            raise ValueError("record budgets must be positive")
        if self.max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")

    @classmethod
    def create(
        cls,
        bootstrap: str | list[str] | tuple[str, ...],
        *,
        security: SecuritySettings | None = None,
        properties: str | Path | None = None,
        **overrides: object,
    ) -> ClientSettings:
        """Settings from a bootstrap list plus security settings or a properties file."""
        if security is not None and properties is not None:
            raise ValueError("give either security settings or a properties file, not both")
        if properties is not None:
            security = load_properties(properties)
        base = cls(bootstrap=parse_bootstrap(bootstrap), security=security or SecuritySettings())
        if security is not None and security.client_id and "client_id" not in overrides:
            overrides["client_id"] = security.client_id
        return replace(base, **overrides) if overrides else base  # type: ignore[arg-type]
