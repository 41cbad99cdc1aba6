"""export's naming and checking helpers, shared by export.py (topics, ACLs, broker configs) and
export_principals.py (users, client quotas): Kubernetes names for Kafka names, and the errors
`kafkaops validate` would report for a generated document. Pure."""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafkaops.resources.documents import Document, Source
from kafkaops.resources.issues import ValidationIssue
from kafkaops.resources.kinds import GROUP_VERSION
from kafkaops.resources.validation import check_document

MAX_NAME_LENGTH = 253  # a Kubernetes object name (DNS-1123 subdomain)
_HASH_LENGTH = 8
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
_NOT_NAME_CHAR = re.compile(r"[^a-z0-9.-]+")


# --- names -------------------------------------------------------------------------------


def is_k8s_name(name: str) -> bool:
    """Whether `name` is a valid metadata.name (a DNS-1123 subdomain of at most 253 characters)."""
    return 0 < len(name) <= MAX_NAME_LENGTH and bool(_DNS_SUBDOMAIN.match(name))


def sanitise(raw: str) -> str:
    """A DNS-1123 form of `raw`: lowercase, other characters as '-', empty labels dropped.
    Lossy (several raw names can give one result): callers add a hash where that matters."""
    text = _NOT_NAME_CHAR.sub("-", raw.lower())
    labels = [re.sub(r"-+", "-", label).strip("-") for label in text.split(".")]
    name = ".".join(label for label in labels if label)
    return fit(name or "x", MAX_NAME_LENGTH)


def fit(name: str, length: int) -> str:
    """`name` cut to `length`, never ending on a separator (a label must end alphanumeric)."""
    return name[:length].rstrip(".-") or "x"


def _hash(raw: str, length: int = _HASH_LENGTH) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:length]


def _suffixed(raw: str, taken: set[str]) -> str:
    """sanitise(raw) plus a stable hash of `raw`, lengthened until it is not in `taken`."""
    for length in range(_HASH_LENGTH, 65, 4):
        suffix = _hash(raw, length)
        candidate = f"{fit(sanitise(raw), MAX_NAME_LENGTH - len(suffix) - 1)}-{suffix}"
        if candidate not in taken:
            return candidate
    raise AssertionError(f"no free name for {raw!r}")  # 64 hex digits of sha256 collide: not in practice


def topic_resource_names(topic_names: Iterable[str]) -> dict[str, str]:
    """metadata.name per topic: the topic name itself when it is a valid Kubernetes name, else a
    sanitised form with a hash of the real name (which then goes in spec.topicName).

    Names kept as they are are claimed first, so that a hashed name can never take one of them;
    the result does not depend on the input order."""
    names = sorted(set(topic_names))
    out = {name: name for name in names if is_k8s_name(name)}
    taken = set(out.values())
    for name in names:
        if name not in out:
            out[name] = _suffixed(name, taken)
            taken.add(out[name])
    return out


def principal_resource_names(principals: Iterable[str]) -> dict[str, str]:
    """metadata.name per principal: `User:orders-svc` -> `user-orders-svc`.

    Principals that sanitise alike (`User:Bob`, `User:bob`) all get a hash suffix rather than
    the first one winning the plain name, so a name does not depend on which others exist."""
    unique = sorted(set(principals))
    by_base: dict[str, list[str]] = defaultdict(list)
    for principal in unique:
        by_base[sanitise(principal)].append(principal)
    out: dict[str, str] = {}
    taken = {base for base, members in by_base.items() if len(members) == 1}
    for base, members in sorted(by_base.items()):
        if len(members) == 1:
            out[members[0]] = base
            continue
        for principal in members:
            out[principal] = _suffixed(principal, taken)
            taken.add(out[principal])
    return out


# --- validation of one generated document ----------------------------------------------------


def document_errors(body: Mapping[str, Any]) -> list[ValidationIssue]:
    """The errors `kafkaops validate` would report for `body` on its own."""
    kind = body["kind"]
    doc = Document(Source("<export>", 0, kind, None, body["metadata"]["name"]), body)
    return [issue for issue in check_document(doc) if issue.is_error]


def problems_text(errors: Sequence[ValidationIssue]) -> str:
    return "; ".join(f"{e.path}: {e.reason} [{e.rule}]" if e.path else f"{e.reason} [{e.rule}]" for e in errors)


def manifest(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": GROUP_VERSION, "kind": kind, "metadata": {"name": name}, "spec": spec}
