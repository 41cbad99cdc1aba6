"""SCRAM credentials (KIP-554): the typed values of DescribeUserScramCredentials (API 50) and
AlterUserScramCredentials (API 51), and the client-side salting.

Kafka never receives a password: the client picks a random salt and an iteration count and
sends the salted password, RFC 5802's ``Hi(password, salt, i)`` (PBKDF2 with HMAC of the
mechanism's hash, computed here with ``hashlib.pbkdf2_hmac``); the broker derives the stored and
server keys from it. ``scram_upsertion`` does this. Like Kafka's own ``ScramFormatter``, the
password is encoded as UTF-8 without SASLprep (identical for ASCII passwords).

Salt and salted password are as good as the password to an attacker who can read them: the
repr of an upsertion never shows them, and the password is taken as (or wrapped in) a
``Secret``. Pure values, no I/O.
"""

from __future__ import annotations

import enum
import hashlib
import secrets
from dataclasses import field
from typing import Final

from kafkaops.frozen import frozen

from .security import Secret

# Kafka's bounds (ScramMechanism.minIterations, and the controller's cap in KIP-554).
MIN_ITERATIONS: Final = 4096
MAX_ITERATIONS: Final = 16384
DEFAULT_ITERATIONS: Final = MIN_ITERATIONS
SALT_BYTES: Final = 32


class ScramMechanism(enum.IntEnum):
    """The SCRAM mechanisms with Kafka's wire values (int8 in APIs 50 and 51)."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def sasl_name(self) -> str:
        """The SASL mechanism name (``SCRAM-SHA-256``), as in ``sasl.mechanism``."""
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        if self is ScramMechanism.UNKNOWN:
            raise ValueError("the UNKNOWN SCRAM mechanism has no hash function")
        return "sha256" if self is ScramMechanism.SCRAM_SHA_256 else "sha512"

    @classmethod
    def parse(cls, value: str | int | ScramMechanism) -> ScramMechanism:
        """``SCRAM-SHA-256``, ``scram-sha-512`` (any case), or the wire value 1/2."""
        if isinstance(value, ScramMechanism):
            return value
        if isinstance(value, int):
            return cls(value)
        name = value.strip().upper().replace("-", "_")
        if name not in ("SCRAM_SHA_256", "SCRAM_SHA_512"):
            raise ValueError(f"unknown SCRAM mechanism {value!r}: expected SCRAM-SHA-256 or SCRAM-SHA-512")
        return cls[name]


@frozen(order=True)
class ScramCredentialInfo:
    """What Kafka tells about a stored credential: its mechanism and iterations, nothing else."""

    mechanism: ScramMechanism
    iterations: int


@frozen
class ScramUpsertion:
    """Create or replace ``user``'s credential for ``mechanism`` (build it with `scram_upsertion`)."""

    user: str
    mechanism: ScramMechanism
    iterations: int
    salt: bytes = field(repr=False)
    salted_password: bytes = field(repr=False)

    @property
    def key(self) -> tuple[str, ScramMechanism]:
        return (self.user, self.mechanism)

    def __repr__(self) -> str:  # the salt and salted password are secret
        return f"ScramUpsertion(user={self.user!r}, mechanism={self.mechanism.sasl_name}, iterations={self.iterations})"

    __str__ = __repr__

    def __reduce__(self) -> object:
        raise TypeError("ScramUpsertion holds a salted password and cannot be pickled")


@frozen
class ScramDeletion:
    """Remove ``user``'s credential for ``mechanism``."""

    user: str
    mechanism: ScramMechanism

    @property
    def key(self) -> tuple[str, ScramMechanism]:
        return (self.user, self.mechanism)


ScramAlteration = ScramUpsertion | ScramDeletion


def salted_password(mechanism: ScramMechanism, password: str | Secret, salt: bytes, iterations: int) -> bytes:
    """RFC 5802 ``Hi(password, salt, iterations)``: PBKDF2-HMAC with the mechanism's hash."""
    plain = password.reveal() if isinstance(password, Secret) else password
    return hashlib.pbkdf2_hmac(mechanism.hash_name, plain.encode("utf-8"), salt, iterations)


def scram_upsertion(
    user: str,
    mechanism: str | int | ScramMechanism,
    password: str | Secret,
    iterations: int = DEFAULT_ITERATIONS,
    *,
    salt: bytes | None = None,
) -> ScramUpsertion:
    """An upsertion of ``user``'s credential: a fresh random salt (unless given) and the salted
    password. Raises ValueError naming the user, the field and the reason (never the password)."""
    where = f"SCRAM credential for user {user!r}"
    if not isinstance(user, str) or not user:
        raise ValueError("SCRAM credential: user must be a non-empty string")
    try:
        chosen = ScramMechanism.parse(mechanism)
    except ValueError as exc:
        raise ValueError(f"{where}: mechanism: {exc}") from None
    if chosen is ScramMechanism.UNKNOWN:
        raise ValueError(f"{where}: mechanism: expected SCRAM-SHA-256 or SCRAM-SHA-512")
    if isinstance(iterations, bool) or not isinstance(iterations, int):
        raise ValueError(f"{where}: iterations must be an integer")
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(
            f"{where}: iterations {iterations} is outside Kafka's range {MIN_ITERATIONS}-{MAX_ITERATIONS}"
        )
    secret = Secret(password)
    if not secret.reveal():
        raise ValueError(f"{where}: password must not be empty")
    if salt is None:
        salt = secrets.token_bytes(SALT_BYTES)
    elif not salt:
        raise ValueError(f"{where}: salt must not be empty")
    return ScramUpsertion(user, chosen, iterations, bytes(salt), salted_password(chosen, secret, salt, iterations))
