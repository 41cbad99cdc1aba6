"""Config values: Kafka-aware equality and sensitivity. Pure."""

from __future__ import annotations

import re
from functools import lru_cache

from kafkaops.reconcile.observed import ObservedConfig

# Keys whose value is a comma list where order does not matter.
_LIST_KEYS = re.compile(r"(^cleanup\.policy$|^log\.cleanup\.policy$|replication\.throttled\.replicas$)")
# Names that hold secrets even when a broker does not flag them (defence in depth).
SENSITIVE_NAME_PATTERN = r"(password|secret|jaas|credential|token|\.key$|private)"  # case-insensitive
_SENSITIVE_NAME = re.compile(SENSITIVE_NAME_PATTERN, re.IGNORECASE)


def is_sensitive(key: str, observed: ObservedConfig | None = None) -> bool:
    return _sensitive_name(key) or (observed is not None and observed.sensitive)


@lru_cache(maxsize=4096)
def _sensitive_name(key: str) -> bool:
    """Config names repeat across thousands of resources: the pattern runs once per name."""
    return bool(_SENSITIVE_NAME.search(key))


@lru_cache(maxsize=1024)
def sensitive_keys(keys: frozenset[str]) -> tuple[str, ...]:
    """The names among `keys` that hold secrets. The resources of one apply share a few sets of
    config keys: asked once per set, not once per key of every resource."""
    return tuple([key for key in keys if _sensitive_name(key)])


def values_equal(key: str, desired: str, observed: str | None) -> bool:
    """Whether Kafka holds `desired` for `key`, allowing for Kafka's spellings
    (list order, `1.0` vs `1`, `TRUE` vs `true`)."""
    if observed is None:
        return False
    a, b = desired.strip(), observed.strip()
    if a == b:
        return True
    if _LIST_KEYS.search(key):
        return sorted(x.strip() for x in a.split(",") if x.strip()) == sorted(x.strip() for x in b.split(",") if x.strip())
    if a.lower() in ("true", "false") or b.lower() in ("true", "false"):
        return a.lower() == b.lower()
    try:
        return float(a) == float(b)
    except ValueError:
        return False
