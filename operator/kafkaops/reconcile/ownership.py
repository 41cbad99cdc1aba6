"""Which config keys kafkaops set, so that a key removed from a manifest is reset only
when kafkaops set it before, and keys set by others are never touched.

An `Ownership` maps an owner (`topic/<name>`, `broker/<id>`, `broker/default`)
to the keys kafkaops set on it. For sensitive keys it also keeps a salted
scrypt fingerprint of the value applied, so that an unchanged secret is not
re-sent (Kafka never returns sensitive values) and the value itself is never
stored.

Stores: `FileOwnershipStore` (the CLI: one JSON file, one section per cluster
id; `--state`) and, in the operator, the resource's status. No store means
"owns nothing known": removed keys are left alone, which is the safe side.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import tempfile
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

from rpds import HashTrieMap

from kafkaops.frozen import frozen

FORMAT_VERSION = 1
_SCRYPT = {"n": 2**14, "r": 8, "p": 1}


def topic_owner(name: str) -> str:
    return f"topic/{name}"


def broker_owner(broker_key: str) -> str:
    return f"broker/{broker_key or 'default'}"


def fingerprint(value: str, salt: bytes | None = None) -> str:
    """A salted scrypt fingerprint of a secret value: `scrypt$<salt hex>$<hash hex>`."""
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.scrypt(value.encode(), salt=salt, dklen=32, **_SCRYPT)
    return f"scrypt${salt.hex()}${digest.hex()}"


def fingerprint_matches(value: str, stored: str | None) -> bool:
    if not stored or not stored.startswith("scrypt$"):
        return False
    try:
        _, salt, digest = stored.split("$")
        expected = bytes.fromhex(digest)
        actual = hashlib.scrypt(value.encode(), salt=bytes.fromhex(salt), dklen=32, **_SCRYPT)
    except ValueError:
        return False
    return hmac.compare_digest(expected, actual)


@frozen
class Ownership:
    """owner -> {config key -> fingerprint of a sensitive value, or None}."""

    owners: Mapping[str, Mapping[str, str | None]] = field(default_factory=HashTrieMap)
    # prefix -> the owners named so (named_like's answers), carried forward by `updated`
    _named: dict[str, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)

    def keys(self, owner: str) -> frozenset[str]:
        return frozenset(self.owners.get(owner, {}))

    def fingerprint(self, owner: str, key: str) -> str | None:
        return self.owners.get(owner, {}).get(key)

    def named_like(self, prefix: str) -> frozenset[str]:
        """The owners whose name starts with `prefix`. One scan of the owners the first time it is
        asked; the copies `updated` makes carry the answer forward by their changes alone, so a
        caller asking on every apply (the reassignment manager's leftover throttles, a few among
        100,000 topic owners) does not scan the whole cluster each time: that scan was 79 % of the
        operator's samples while it created 100,000 KafkaTopics (py-spy)."""
        found = self._named.get(prefix)
        if found is None:
            found = self._named[prefix] = frozenset(o for o in self.owners if o.startswith(prefix))
        return found

    def updated(self, changes: Mapping[str, Mapping[str, str | None] | None]) -> Ownership:
        """A copy where each owner in `changes` gets its new key map (None: forget the owner).

        Nothing unchanged is copied: the owners are a persistent map (rpds' HashTrieMap, a hash
        array mapped trie) that shares all but the changed paths with this one, and the unchanged
        owners' key maps are shared read-only views. Copying them made every update as long as the
        whole cluster's ownership, i.e. quadratic over a creation: 7.6 % of the operator at 2,000
        KafkaTopics when each key map was copied, then 78 % at 100,000 when only the dict of owners
        was (py-spy)."""
        owners = self.owners if isinstance(self.owners, HashTrieMap) else HashTrieMap(self.owners)
        for owner, keys in changes.items():
            if keys is None or not keys:
                owners = owners.discard(owner)
            else:
                owners = owners.insert(owner, MappingProxyType(dict(keys)))
        named = {}
        for prefix, found in self._named.items():
            touched = [o for o in changes if o.startswith(prefix)]
            named[prefix] = (found.difference(touched) | {o for o in touched if o in owners}) if touched else found
        return Ownership(owners, named)


class OwnershipStore(Protocol):
    def load(self, cluster_id: str) -> Ownership: ...

    def update(self, cluster_id: str, changes: Mapping[str, Mapping[str, str | None] | None]) -> None:
        """Merge `changes` (owner -> new key map, None: forget) into what is stored. Merging, not
        replacing, so that concurrent reconciles of different resources never lose each other's
        entries."""
        ...


class NoOwnershipStore:
    """Remembers nothing: removed keys are never reset (the safe default without state)."""

    def load(self, cluster_id: str) -> Ownership:
        return Ownership()

    def update(self, cluster_id: str, changes: Mapping[str, Mapping[str, str | None] | None]) -> None:
        return None


class MemoryOwnershipStore:
    """Ownership held in memory (the operator: seeded from each resource's status, which is
    where it persists)."""

    def __init__(self) -> None:
        self._clusters: dict[str, Ownership] = {}

    def load(self, cluster_id: str) -> Ownership:
        return self._clusters.get(cluster_id, Ownership())

    def update(self, cluster_id: str, changes: Mapping[str, Mapping[str, str | None] | None]) -> None:
        self._clusters[cluster_id] = self.load(cluster_id).updated(changes)


class OwnershipFileError(ValueError):
    pass


class FileOwnershipStore:
    """A JSON file: {"version": 1, "clusters": {cluster id: {owner: {key: fingerprint|null}}}}.

    Written atomically (temp file + rename). Holds no secret values.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"FileOwnershipStore({str(self.path)!r})"

    def _read(self) -> dict:
        if not self.path.exists():
            return {"version": FORMAT_VERSION, "clusters": {}}
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise OwnershipFileError(f"state file {self.path}: cannot read: {exc}") from exc
        if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION or not isinstance(data.get("clusters"), dict):
            raise OwnershipFileError(f"state file {self.path}: not a kafkaops state file of version {FORMAT_VERSION}")
        return data

    def load(self, cluster_id: str) -> Ownership:
        section = self._read()["clusters"].get(cluster_id) or {}
        return Ownership(MappingProxyType({owner: dict(keys) for owner, keys in section.items()}))

    def update(self, cluster_id: str, changes: Mapping[str, Mapping[str, str | None] | None]) -> None:
        data = self._read()
        ownership = self.load(cluster_id).updated(changes)
        data["clusters"][cluster_id] = {owner: dict(sorted(keys.items())) for owner, keys in sorted(ownership.owners.items())}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".kafkaops-state-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True)
            out.write("\n")
        os.replace(tmp, self.path)
