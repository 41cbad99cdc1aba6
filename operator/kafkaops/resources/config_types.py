"""Kafka config value types (ConfigDef.Type) and the checks of one value against its spec.

A ConfigSpec describes one config key as Kafka defines it: type, default,
range, allowed values. `ConfigSpec.check(value)` answers the problems with a
value given as the string Kafka would receive.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from enum import StrEnum

from kafkaops.frozen import frozen
from kafkaops.resources.issues import Finding, Severity

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

_INTEGER = re.compile(r"^[+-]?[0-9]+$")
_DOUBLE = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")

# Rule names for config values.
INVALID_CONFIG_VALUE = "InvalidConfigValue"
CONFIG_VALUE_OUT_OF_RANGE = "ConfigValueOutOfRange"
DEPRECATED_CONFIG_KEY = "DeprecatedConfigKey"
REJECTED_BY_KAFKA4 = "RejectedByKafka4"


class ConfigType(StrEnum):
    INT = "int"
    LONG = "long"
    DOUBLE = "double"
    BOOLEAN = "boolean"
    STRING = "string"
    LIST = "list"
    CLASS = "class"
    PASSWORD = "password"


@frozen
class ConfigSpec:
    """One config key as Kafka defines it.

    `default` is Kafka's default as the string DescribeConfigs reports (None: no
    default / derived from another setting). `choices` is the set of allowed
    values (for a list: of each element). `validator` returns a reason when a
    value is wrong in a way the other fields cannot say. `deprecated` explains a
    deprecation; `kafka4_minimum`/`kafka4_default` record where Kafka 4.x differs
    from 3.x.
    """

    name: str
    type: ConfigType
    default: str | None
    minimum: float | None = None
    maximum: float | None = None
    choices: frozenset[str] | None = None
    validator: Callable[[str], str | None] | None = None
    deprecated: str | None = None
    kafka4_minimum: float | None = None
    kafka4_default: str | None = None

    def check(self, value: str, path: str) -> list[Finding]:
        """Problems with `value` for this key, reported at `path`."""
        findings: list[Finding] = []
        text = value.strip()
        parsed: float | int | None = None
        if self.type in (ConfigType.INT, ConfigType.LONG):
            low, high = (INT_MIN, INT_MAX) if self.type == ConfigType.INT else (LONG_MIN, LONG_MAX)
            if not _INTEGER.match(text) or not low <= int(text) <= high:
                return [Finding(path, f"{value!r} is not a valid {self.type} (a whole number from {low} to {high})",
                                INVALID_CONFIG_VALUE)]
            parsed = int(text)
        elif self.type == ConfigType.DOUBLE:
            if not _DOUBLE.match(text):
                return [Finding(path, f"{value!r} is not a valid double", INVALID_CONFIG_VALUE)]
            parsed = float(text)
        elif self.type == ConfigType.BOOLEAN:
            if text.lower() not in ("true", "false"):
                return [Finding(path, f"{value!r} is not a boolean (true or false)", INVALID_CONFIG_VALUE)]
        elif self.type == ConfigType.LIST:
            items = [item.strip() for item in text.split(",")] if text else []
            if self.choices is not None:
                for item in items:
                    if item not in self.choices:
                        return [Finding(path, f"{item!r} is not allowed in this list; use a comma-separated subset of "
                                              f"{_one_of(self.choices)}", INVALID_CONFIG_VALUE)]
                if len(set(items)) != len(items):
                    return [Finding(path, f"{value!r} names an element twice", INVALID_CONFIG_VALUE)]
        elif self.choices is not None and text not in self.choices:
            return [Finding(path, f"{value!r} is not one of {_one_of(self.choices)}{_suggest(text, self.choices)}",
                            INVALID_CONFIG_VALUE)]
        if parsed is not None:
            if self.minimum is not None and parsed < self.minimum:
                findings.append(Finding(path, f"{text} is below the minimum {_num(self.minimum)}", CONFIG_VALUE_OUT_OF_RANGE))
            elif self.maximum is not None and parsed > self.maximum:
                findings.append(Finding(path, f"{text} is above the maximum {_num(self.maximum)}", CONFIG_VALUE_OUT_OF_RANGE))
            elif self.kafka4_minimum is not None and parsed < self.kafka4_minimum:
                findings.append(Finding(path, f"{text} is below Kafka 4.x's minimum {_num(self.kafka4_minimum)}: "
                                              "a Kafka 4 cluster rejects it", REJECTED_BY_KAFKA4, Severity.WARNING))
        if self.validator is not None and not findings:
            reason = self.validator(text)
            if reason:
                findings.append(Finding(path, reason, INVALID_CONFIG_VALUE))
        if self.deprecated:
            findings.append(Finding(path, self.deprecated, DEPRECATED_CONFIG_KEY, Severity.WARNING))
        return findings


def normalise_value(value: object) -> str:
    """The string Kafka receives for a YAML scalar: booleans as true/false, numbers as written."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def suggest(name: str, candidates: Iterable[str]) -> str | None:
    """The closest known name, for "did you mean X?"."""
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return close[0] if close else None


def _suggest(value: str, choices: Iterable[str]) -> str:
    close = suggest(value, choices)
    return f"; did you mean {close!r}?" if close else ""


def _one_of(choices: Iterable[str]) -> str:
    return "{" + ", ".join(sorted(choices)) + "}"


def _num(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)
