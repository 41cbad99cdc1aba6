"""Copies of the JSON-shaped values the emulator stores and serves."""

from __future__ import annotations

from typing import Any


def clone(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars; anything else is shared, as an
    immutable). About 3x quicker than copy.deepcopy, which was an eighth of the emulator's time
    at 2,000 KafkaTopics (py-spy): every write and every watch event copies objects."""
    if type(value) is dict:
        return {key: clone(item) for key, item in value.items()}
    if type(value) is list:
        return [clone(item) for item in value]
    return value
