"""DescribeConfigs and IncrementalAlterConfigs for the fake cluster test double.

Resources: TOPIC (2) and BROKER (4; "" = the cluster-wide dynamic default,
or a broker id). As in Kafka, a broker describes only its own config: a
DescribeConfigs for broker N must be sent to broker N, and describing ""
lists only the dynamic defaults that are set. Sensitive values read as None.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from kafkaops.frozen import frozen

from ..catalog import (
    TOPIC_CONFIGS,
    ConfigType,
    Dynamic,
    broker_spec,
    split_list,
    validate_topic_config,
    validate_value,
)
from ..context import ItemError, RequestContext
from ..state import ClusterStateDouble, ConfigEntry
from .common import invalid_request, respond, topic_name_error, unknown_topic

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {APPEND: "append", SUBTRACT: "subtract"}


def entry_fields(entry: ConfigEntry, synonyms: bool, docs: bool) -> dict[str, Any]:
    """One config as DescribeConfigs / CreateTopics v5+ report it (sensitive values hidden)."""
    hide = entry.sensitive
    return {
        "name": entry.name,
        "value": None if hide else entry.value,
        "read_only": entry.read_only,
        "config_source": int(entry.source),
        "is_sensitive": entry.sensitive,
        "synonyms": [
            {"name": s.name, "value": None if hide else s.value, "source": int(s.source)} for s in entry.synonyms
        ]
        if synonyms
        else [],
        "config_type": int(entry.type),
        "documentation": entry.doc if docs else None,
    }


# -------------------------------------------------------------- DescribeConfigs
def _broker_entries(ctx: RequestContext, name: str) -> list[ConfigEntry] | ItemError:
    if name == "":
        return ctx.state.default_config_entries()
    if name != str(ctx.broker_id):
        return invalid_request(f"Unexpected broker id, expected {ctx.broker_id} or empty string, but received {name}")
    return ctx.state.broker_config_entries(ctx.broker_id)


def _describe_entries(ctx: RequestContext, resource: Any) -> list[ConfigEntry] | ItemError:
    state = ctx.state
    if resource.resource_type == TOPIC:
        error = topic_name_error(resource.resource_name)
        if error is not None:
            return error
        topic = state.topics.get(resource.resource_name)
        if topic is None:
            return unknown_topic(resource.resource_name)
        return state.topic_config_entries(topic.configs, ctx.broker_id)
    if resource.resource_type == BROKER:
        return _broker_entries(ctx, resource.resource_name)
    return invalid_request(f"Unsupported resource type {resource.resource_type} in the fake cluster double")


def handle_describe_configs(ctx: RequestContext, body: Any) -> Any:
    docs = bool(getattr(body, "include_documentation", False))
    results = []
    for resource in body.resources:
        outcome = ctx.forced or _describe_entries(ctx, resource)
        result = {"resource_type": resource.resource_type, "resource_name": resource.resource_name}
        if isinstance(outcome, ItemError):
            results.append({**result, **outcome.fields(), "configs": []})
            continue
        keys = set(resource.configuration_keys or ())
        entries = [e for e in outcome if not keys or e.name in keys]
        configs = [entry_fields(e, body.include_synonyms, docs) for e in entries]
        results.append({**result, "error_code": ErrorCode.none, "error_message": None, "configs": configs})
    return respond(ctx, {"throttle_time": ctx.throttle_time, "results": results})


# ------------------------------------------------------- IncrementalAlterConfigs
@frozen
class ConfigPlan:
    """New overrides for one resource that passed validation."""

    resource_type: int
    resource_name: str
    configs: dict[str, str]
    records: int


def _invalid_config(message: str) -> ItemError:
    return ItemError(ErrorCode.invalid_config, message)


def _current(state: ClusterStateDouble, resource_type: int, name: str) -> dict[str, str] | ItemError:
    if resource_type == TOPIC:
        topic = state.topics.get(name)
        return dict(topic.configs) if topic is not None else unknown_topic(name)
    if resource_type != BROKER:
        return invalid_request(f"Unsupported resource type {resource_type} in the fake cluster double")
    if name == "":
        return dict(state.default_configs)
    if not name.isdigit():
        return invalid_request(f"Failed to parse broker name as an integer: {name}")
    return dict(state.broker_configs.get(int(name), {}))


def _check_key(resource_type: int, resource_name: str, key: str) -> ItemError | None:
    if resource_type == TOPIC:
        return None if key in TOPIC_CONFIGS else _invalid_config(f"Unknown topic config name: {key}")
    spec = broker_spec(key)
    if spec is None:
        return _invalid_config(f"Unknown broker config name: {key}")
    if spec.dynamic is Dynamic.READ_ONLY:
        return _invalid_config(f"Cannot update these configs dynamically: Set({key})")
    if spec.dynamic is Dynamic.PER_BROKER and resource_name == "":
        return _invalid_config(
            f"Cannot update these configs at default cluster level, broker id must be specified: Set({key})"
        )
    return None


def _list_default(resource_type: int, key: str) -> str | None:
    spec = TOPIC_CONFIGS.get(key) if resource_type == TOPIC else broker_spec(key)
    return spec.default if spec is not None else None


def _apply_op(configs: dict[str, str], resource_type: int, op: Any) -> ItemError | None:
    key, value = op.name, op.value
    spec = TOPIC_CONFIGS.get(key) if resource_type == TOPIC else broker_spec(key)
    if op.config_operation == DELETE:
        configs.pop(key, None)
        return None
    if value is None:
        return _invalid_config(f"Null value not supported for : {key}")
    if op.config_operation == SET:
        configs[key] = value
        return None
    if spec is None or spec.type is not ConfigType.LIST:
        return _invalid_config(f"Config value {_OP_NAMES[op.config_operation]} is not allowed for config key: {key}")
    current = split_list(configs.get(key, _list_default(resource_type, key)))
    values = split_list(value)
    if op.config_operation == APPEND:
        current += [v for v in values if v not in current]
    else:
        current = [v for v in current if v not in values]
    configs[key] = ",".join(current)
    return None


def _validate_values(resource_type: int, configs: Mapping[str, str], touched: Sequence[str]) -> ItemError | None:
    for key in touched:
        if key not in configs:
            continue
        if resource_type == TOPIC:
            message = validate_topic_config(key, configs[key])
        else:
            spec = broker_spec(key)
            message = validate_value(spec, configs[key]) if spec is not None else None
        if message is not None:
            return _invalid_config(message)
    return None


def plan_alter(state: ClusterStateDouble, resource: Any) -> ConfigPlan | ItemError:
    """Validate one IncrementalAlterConfigs resource and compute its new overrides."""
    rtype, rname = resource.resource_type, resource.resource_name
    if rtype == TOPIC and topic_name_error(rname) is not None:
        return topic_name_error(rname)  # type: ignore[return-value]
    current = _current(state, rtype, rname)
    if isinstance(current, ItemError):
        return current
    names = [op.name for op in resource.configs]
    if len(set(names)) != len(names):
        return invalid_request("Error due to duplicate config keys")
    for op in resource.configs:
        if op.config_operation not in (SET, DELETE, APPEND, SUBTRACT):
            return invalid_request(f"Unknown alter configs operation type {op.config_operation}")
        error = _check_key(rtype, rname, op.name) or _apply_op(current, rtype, op)
        if error is not None:
            return error
    error = _validate_values(rtype, current, names)
    return error if error is not None else ConfigPlan(rtype, rname, current, len(names))


def _store(state: ClusterStateDouble, plan: ConfigPlan) -> None:
    if plan.resource_type == TOPIC:
        topic = state.topics[plan.resource_name]
        topic.configs = plan.configs
        topic.touch()
        return
    if plan.resource_name == "":
        state.default_configs = plan.configs
    else:
        state.broker_configs[int(plan.resource_name)] = plan.configs
    state.bump_configs()


def handle_incremental_alter_configs(ctx: RequestContext, body: Any) -> Any:
    state = ctx.state
    counts = Counter((r.resource_type, r.resource_name) for r in body.resources)
    results: list[dict[str, Any]] = []
    plans: list[tuple[int, ConfigPlan]] = []
    for index, resource in enumerate(body.resources):
        key = (resource.resource_type, resource.resource_name)
        outcome: ConfigPlan | ItemError | None = ctx.gate(index, needs_controller=resource.resource_type == TOPIC)
        if outcome is None and counts[key] > 1:
            outcome = invalid_request("Each resource must appear at most once.")
        if outcome is None:
            outcome = plan_alter(state, resource)
        if isinstance(outcome, ConfigPlan):
            plans.append((len(results), outcome))
            outcome = None
        results.append(
            {
                "resource_type": resource.resource_type,
                "resource_name": resource.resource_name,
                **(outcome or ItemError(ErrorCode.none)).fields(),
            }
        )
    limit = ctx.record_limit_error(sum(plan.records for _, plan in plans))
    for slot, plan in plans:
        if limit is not None:
            results[slot].update(limit.fields())
            continue
        if not body.validate_only:
            _store(state, plan)
        results[slot].update(ctx.success().fields())
    return respond(ctx, {"throttle_time": ctx.throttle_time, "responses": results})
