"""The fake cluster's control endpoint: its fault hooks and its state, over HTTP on 127.0.0.1.

`kafkaops dev-cluster --control-port N` serves these routes (docs/reliability.md):

    GET    /state                      topics, ACLs, broker configs, reassignments, counters,
                                       SCRAM users (mechanisms + iterations only) and quotas
    POST   /faults                     arm a fault (body: fault_from_json)
    DELETE /faults                     disarm every fault
    GET    /faults                     pending faults and how often each kind fired
    POST   /controller                 move the controller ({"to": id} or the next live broker)
    POST   /brokers/{id}/down          stop a broker (connections close, leaders move)
    POST   /brokers/{id}/up            bring it back on its port
    PUT    /users/{name}               (with --sasl-user) add a SASL user or rotate its password
                                       ({"password": "..."}; new logins need the new one)
    DELETE /users/{name}               remove a SASL user

`state_snapshot` is what the soak reads its Kafka-side invariants from: the double's own state,
independent of anything the operator believes.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import TYPE_CHECKING, Any

from kafkaops.testing.control_http import ControlError, ControlServer, field

from .faults import FaultDouble, FaultKind
from .principals import state_view

if TYPE_CHECKING:
    from .server import FakeClusterDouble

FAULT_KINDS = {kind.value: kind for kind in FaultKind}


def fault_from_json(body: dict[str, Any]) -> FaultDouble:
    """A FaultDouble from a control request body.

    `kind`: not_controller | timed_out_after_apply | throttled | drop_connection | slow; optional
    `count` (default 1; null = until cleared), `api_keys` (list of ints), `broker_id`, and per kind
    `move_controller` (not_controller), `throttle_ms`/`allow_items` (throttled), `after_apply`
    (drop_connection, slow), `delay_s` (slow).
    """
    kind = FAULT_KINDS.get(field(body, "kind", str, required=True))
    if kind is None:
        raise ControlError(f"kind: expected one of {', '.join(sorted(FAULT_KINDS))}, got {body['kind']!r}")
    allowed = {"kind", "count", "api_keys", "broker_id"} | {
        FaultKind.NOT_CONTROLLER: {"move_controller"},
        FaultKind.TIMED_OUT_AFTER_APPLY: set(),
        FaultKind.THROTTLED: {"throttle_ms", "allow_items"},
        FaultKind.DROP_CONNECTION: {"after_apply"},
        FaultKind.SLOW: {"delay_s", "after_apply"},
    }[kind]
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise ControlError(f"{unknown[0]}: not a field of a {kind.value} fault (fields: {', '.join(sorted(allowed))})")
    count = body.get("count", 1)
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise ControlError(f"count: expected a positive integer or null, got {count!r}")
    api_keys = field(body, "api_keys", list)
    if api_keys is not None and not all(isinstance(k, int) and not isinstance(k, bool) for k in api_keys):
        raise ControlError(f"api_keys: expected a list of API keys (integers), got {api_keys!r}")
    common: dict[str, Any] = {"count": count, "api_keys": api_keys, "broker_id": field(body, "broker_id", int)}
    if kind is FaultKind.NOT_CONTROLLER:
        return FaultDouble.not_controller(move_controller=field(body, "move_controller", bool, False), **common)
    if kind is FaultKind.TIMED_OUT_AFTER_APPLY:
        return FaultDouble.timed_out_after_apply(**common)
    if kind is FaultKind.THROTTLED:
        return FaultDouble.throttled(throttle_ms=_non_negative(body, "throttle_ms", int, 100),
                                     allow_items=_non_negative(body, "allow_items", int, 0), **common)
    if kind is FaultKind.DROP_CONNECTION:
        return FaultDouble.drop_connection(after_apply=field(body, "after_apply", bool, False), **common)
    return FaultDouble.slow(_non_negative(body, "delay_s", float, 0.5),
                            after_apply=field(body, "after_apply", bool, False), **common)


def _non_negative(body: dict[str, Any], name: str, kind: type, default: Any) -> Any:
    value = field(body, name, kind, default)
    if value < 0:
        raise ControlError(f"{name}: must not be negative, got {value!r}")
    return value


def fault_to_json(fault: FaultDouble) -> dict[str, Any]:
    doc = dataclasses.asdict(fault)
    doc["kind"] = fault.kind.value
    doc["api_keys"] = sorted(fault.api_keys) if fault.api_keys is not None else None
    return doc


def state_snapshot(cluster: FakeClusterDouble) -> dict[str, Any]:
    """The double's state as JSON: what Kafka holds, read without the admin client."""
    state = cluster.state
    return {
        "cluster_id": state.cluster_id,
        "mode": state.mode,
        "controller": state.controller_id,
        "brokers": {str(b.node_id): {"port": b.port, "alive": b.alive, "rack": b.rack}
                    for b in state.brokers.values()},
        "topics": {
            name: {
                "topic_id": str(topic.topic_id),
                "replicas": [list(p.replicas) for p in topic.partitions],
                "leaders": [p.leader for p in topic.partitions],
                "configs": dict(topic.configs),
            }
            for name, topic in state.topics.items()
        },
        "acls": [dataclasses.asdict(binding) for binding in state.acls],
        "broker_configs": {str(b): dict(c) for b, c in state.broker_configs.items() if c},
        "default_broker_configs": dict(state.default_configs),
        "reassignments": [{"topic": r.topic, "partition": r.partition, "target": list(r.target)}
                          for r in state.reassignments.values()],
        "created": dict(state.created),
        "deleted": dict(state.deleted),
        "deletion_times": [[at, name] for at, name in state.deletion_times],
        "sasl_users": sorted(cluster.sasl.users) if cluster.sasl is not None and hasattr(cluster.sasl, "users") else None,
        "already_exists": dict(state.already_exists),
        **state_view(state.principals),  # "users" and "quotas": never a salt or salted password
        "errors": [repr(e) for e in cluster.errors],
    }


def control_server(cluster: FakeClusterDouble, port: int = 0, host: str = "127.0.0.1") -> ControlServer:
    """The control endpoint of a running FakeClusterDouble (start it in the cluster's event loop)."""

    async def get_state(_body: dict[str, Any], _args: dict[str, str]) -> Any:
        return state_snapshot(cluster)

    async def add_fault(body: dict[str, Any], _args: dict[str, str]) -> Any:
        fault = fault_from_json(body)
        cluster.inject(fault)
        return {"armed": fault_to_json(fault)}

    async def clear_faults(_body: dict[str, Any], _args: dict[str, str]) -> Any:
        cluster.clear_faults()
        return {"ok": True}

    async def get_faults(_body: dict[str, Any], _args: dict[str, str]) -> Any:
        fired = Counter(fault.kind.value for fault, _api, _broker in cluster.fired_faults)
        return {"pending": [fault_to_json(f) for f in cluster.pending_faults], "fired": dict(fired)}

    async def move_controller(body: dict[str, Any], _args: dict[str, str]) -> Any:
        to = field(body, "to", int)
        if to is not None and to not in cluster.brokers:
            raise ControlError(f"to: no broker {to} (brokers: {', '.join(map(str, cluster.brokers))})")
        return {"controller": cluster.move_controller(to)}

    def broker_id(args: dict[str, str]) -> int:
        raw = args["id"]
        if not raw.lstrip("-").isdigit() or int(raw) not in cluster.brokers:
            raise ControlError(f"broker {raw}: no such broker (brokers: {', '.join(map(str, cluster.brokers))})")
        return int(raw)

    async def broker_down(_body: dict[str, Any], args: dict[str, str]) -> Any:
        broker = broker_id(args)
        if cluster.state.is_alive(broker):
            await cluster.stop_broker(broker)
        return {"live_brokers": list(cluster.live_brokers)}

    async def broker_up(_body: dict[str, Any], args: dict[str, str]) -> Any:
        broker = broker_id(args)
        if not cluster.state.is_alive(broker):
            await cluster.start_broker(broker)
        return {"live_brokers": list(cluster.live_brokers)}

    async def set_user(body: dict[str, Any], args: dict[str, str]) -> Any:
        """Add a SASL user or rotate its password (new logins need the new one); the answer never
        holds the password."""
        sasl = cluster.sasl
        if sasl is None or not hasattr(sasl, "set_password"):
            raise ControlError("users: this cluster runs without SASL (start it with --sasl-user NAME:PASSWORD)")
        password = field(body, "password", str)
        if not password:
            raise ControlError("password: required, a non-empty string")
        sasl.set_password(args["name"], password)
        return {"users": sorted(sasl.users)}

    async def remove_user(_body: dict[str, Any], args: dict[str, str]) -> Any:
        sasl = cluster.sasl
        if sasl is None or not hasattr(sasl, "set_password"):
            raise ControlError("users: this cluster runs without SASL (start it with --sasl-user NAME:PASSWORD)")
        sasl.set_password(args["name"], None)
        return {"users": sorted(sasl.users)}

    return ControlServer({
        ("GET", "/state"): get_state,
        ("POST", "/faults"): add_fault,
        ("DELETE", "/faults"): clear_faults,
        ("GET", "/faults"): get_faults,
        ("POST", "/controller"): move_controller,
        ("POST", "/brokers/{id}/down"): broker_down,
        ("POST", "/brokers/{id}/up"): broker_up,
        ("PUT", "/users/{name}"): set_user,
        ("DELETE", "/users/{name}"): remove_user,
    }, host=host, port=port)
