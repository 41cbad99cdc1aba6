"""Typed errors: a per-item KafkaError value and the exceptions the client raises."""

from __future__ import annotations


from kio.schema.errors import ErrorCode

from kafkaops.frozen import frozen


@frozen
class KafkaError:
    """One item's error as Kafka reported it (or as the client inferred it)."""

    code: int
    name: str
    message: str | None
    retriable: bool

    @classmethod
    def from_code(cls, code: int, message: str | None = None) -> KafkaError | None:
        """None for code 0, otherwise the typed error (unknown codes kept as such)."""
        if code == 0:
            return None
        try:
            known = ErrorCode(code)
        except ValueError:
            return cls(code, f"UNKNOWN_ERROR_{code}", message, False)
        return cls(code, known.name.upper(), message or None, bool(known.retriable))

    @classmethod
    def of(cls, code: ErrorCode, message: str | None = None) -> KafkaError:
        error = cls.from_code(int(code), message)
        assert error is not None
        return error

    def __str__(self) -> str:
        return f"{self.name}: {self.message}" if self.message else self.name


class KafkaOpsError(Exception):
    """Base class for errors the kafkaops Kafka client raises."""


class KafkaConnectionError(KafkaOpsError):
    """A broker could not be reached, or the connection broke."""


class BrokerUnreachable(KafkaConnectionError):
    """One address could not be opened as a Kafka connection: refused, timed out, a TLS mismatch, or
    a server that does not speak Kafka. ``cause`` is short and names no secret; ``retriable`` is
    False when trying again cannot help (the listener speaks another protocol)."""

    def __init__(self, address: str, cause: str, *, retriable: bool = True) -> None:
        self.address = address
        self.cause = cause
        self.retriable = retriable
        super().__init__(f"{address}: {cause}")


class ClusterUnreachable(KafkaConnectionError):
    """No broker of a cluster could be reached; ``failures`` says why for each address tried."""

    def __init__(self, failures: tuple[BrokerUnreachable, ...], extra: tuple[str, ...] = ()) -> None:
        self.failures = failures
        self.retriable = any(f.retriable for f in failures) or bool(extra) or not failures
        super().__init__("no broker reachable: " + "; ".join([*(str(f) for f in failures), *extra]))

    @property
    def cause(self) -> str:
        """Every distinct reason, addresses included: `127.0.0.1:1: connection refused`."""
        return "; ".join(dict.fromkeys(str(f) for f in self.failures)) or str(self)


class RequestTimedOut(KafkaOpsError):
    """No response arrived within the request timeout."""


class AuthenticationFailed(KafkaOpsError):
    """SASL or TLS authentication was rejected. Never carries credentials."""


class UnsupportedFeature(KafkaOpsError):
    """The cluster lacks an API (or every version kafkaops can speak of it)."""

    def __init__(
        self,
        api: str,
        api_key: int,
        broker_id: int | None,
        broker_range: tuple[int, int] | None,
        client_range: tuple[int, int],
    ) -> None:
        self.api = api
        self.api_key = api_key
        self.broker_id = broker_id
        self.broker_range = broker_range
        self.client_range = client_range
        where = f"broker {broker_id}" if broker_id is not None else "the broker"
        if broker_range is None:
            detail = f"{where} does not support {api} (API key {api_key}) at all"
        else:
            detail = (
                f"{where} supports {api} (API key {api_key}) versions "
                f"{broker_range[0]}-{broker_range[1]}, kafkaops needs one of "
                f"{client_range[0]}-{client_range[1]}"
            )
        super().__init__(detail)

    def as_kafka_error(self) -> KafkaError:
        return KafkaError.of(ErrorCode.unsupported_version, str(self))


class KafkaRequestError(KafkaOpsError):
    """A whole request failed with a Kafka error (not a per-item one)."""

    def __init__(self, api: str, error: KafkaError) -> None:
        self.api = api
        self.error = error
        super().__init__(f"{api} failed: {error}")
