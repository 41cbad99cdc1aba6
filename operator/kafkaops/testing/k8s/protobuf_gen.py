"""Writes `protobuf_messages.json`, the message tables `protobuf.py` decodes with (a maintainer's tool).

The tables come from the public `generated.proto` files of kubernetes/api and
kubernetes/apimachinery (https://github.com/kubernetes/api, .../apimachinery), restricted to the
messages reachable from the built-in kinds the emulator stores (`KINDS` below):

    python -m kafkaops.testing.k8s.protobuf_gen /path/to/kubernetes/api /path/to/kubernetes/apimachinery

Run it again (and commit the JSON) when a kind is added to the emulator.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

# apiVersion/kind -> the proto message of that kind
KINDS = {
    "v1/Namespace": "k8s.io.api.core.v1.Namespace",
    "v1/Secret": "k8s.io.api.core.v1.Secret",
    "v1/ConfigMap": "k8s.io.api.core.v1.ConfigMap",
    "v1/ServiceAccount": "k8s.io.api.core.v1.ServiceAccount",
    "v1/Service": "k8s.io.api.core.v1.Service",
    "v1/Event": "k8s.io.api.core.v1.Event",
    "apps/v1/Deployment": "k8s.io.api.apps.v1.Deployment",
    "policy/v1/PodDisruptionBudget": "k8s.io.api.policy.v1.PodDisruptionBudget",
    "rbac.authorization.k8s.io/v1/ClusterRole": "k8s.io.api.rbac.v1.ClusterRole",
    "rbac.authorization.k8s.io/v1/ClusterRoleBinding": "k8s.io.api.rbac.v1.ClusterRoleBinding",
    "rbac.authorization.k8s.io/v1/Role": "k8s.io.api.rbac.v1.Role",
    "rbac.authorization.k8s.io/v1/RoleBinding": "k8s.io.api.rbac.v1.RoleBinding",
    "networking.k8s.io/v1/NetworkPolicy": "k8s.io.api.networking.v1.NetworkPolicy",
    "coordination.k8s.io/v1/Lease": "k8s.io.api.coordination.v1.Lease",
    "events.k8s.io/v1/Event": "k8s.io.api.events.v1.Event",
    "v1/DeleteOptions": "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions",
}
_PACKAGE = re.compile(r"^package\s+([\w.]+);", re.M)
_MESSAGE = re.compile(r"^message\s+(\w+)\s*\{(.*?)^\}", re.M | re.S)
_FIELD = re.compile(r"^\s*(optional|repeated)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*;", re.M)
_MAP = re.compile(r"^\s*map<\s*(\w+)\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;", re.M)
SCALARS = {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "double", "float", "sint32", "sint64",
           "fixed32", "fixed64"}


def parse(text: str) -> dict[str, dict[str, Any]]:
    """Messages of one .proto file: full name -> {field number: [name, label, type, key type]}."""
    package = _PACKAGE.search(text)
    if package is None:
        return {}
    messages = {}
    for name, body in _MESSAGE.findall(text):
        body = re.sub(r"//.*", "", body)
        fields: dict[str, Any] = {}
        for label, type_, field, number in _FIELD.findall(body):
            fields[number] = [field, label, _qualify(type_, package[1]), None]
        for key, value, field, number in _MAP.findall(body):
            fields[number] = [field, "map", _qualify(value, package[1]), key]
        messages[f"{package[1]}.{name}"] = fields
    return messages


def _qualify(type_: str, package: str) -> str:
    if type_ in SCALARS:
        return type_
    return type_.lstrip(".") if type_.startswith(".") else f"{package}.{type_}"


def build(roots: list[Path]) -> dict[str, Any]:
    messages: dict[str, dict[str, Any]] = {}
    for root in roots:
        for proto in sorted(root.rglob("generated.proto")):
            messages.update(parse(proto.read_text("utf-8")))
    reachable: dict[str, dict[str, Any]] = {}
    todo = list(KINDS.values())
    while todo:
        name = todo.pop()
        if name in reachable:
            continue
        if name not in messages:
            raise SystemExit(f"message {name} not found in {roots}")
        reachable[name] = messages[name]
        todo.extend(f[2] for f in messages[name].values() if f[2] not in SCALARS)
    return {"kinds": KINDS, "messages": dict(sorted(reachable.items()))}


def main(argv: list[str]) -> int:
    if len(argv) < 1:
        print(__doc__, file=sys.stderr)
        return 2
    tables = build([Path(p) for p in argv])
    out = Path(__file__).with_name("protobuf_messages.json")
    out.write_text(json.dumps(tables, separators=(",", ":"), sort_keys=True) + "\n", "utf-8")
    print(f"wrote {out}: {len(tables['messages'])} messages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
