"""A composed YAML document -> its Python data and the position of every field, in one walk.

PyYAML's C loader parses and composes nodes in C, but its SafeConstructor is pure Python
and generic (a generator per mapping, a cache per node, a method lookup per tag): for 5,000
small manifests it took as long as parsing itself, and the loader then walked the same nodes
again for line numbers. `construct` does both at once for the documents manifests are made
of — mappings with scalar keys, sequences, and str/int/float/bool/null scalars — converting
each scalar exactly as SafeConstructor does (the same methods for int, float and bool).

Anything else (merge keys `<<`, aliases, complex keys, explicit tags such as !!timestamp,
!!binary, !!set or custom ones) answers None: the caller then uses SafeConstructor and its own
walk, so results and error messages never differ.
"""

from __future__ import annotations

from typing import Any

import yaml

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"

Positions = tuple[dict[str, int], dict[str, int], list[tuple[str, int, int]]]


class _NotPlain(Exception):
    """The document uses something only SafeConstructor handles."""


def construct(node: yaml.Node, constructor: yaml.constructor.SafeConstructor) -> tuple[Any, Positions] | None:
    """(data, (lines, columns, duplicates)) of a composed document, or None when it is not plain.

    `lines`/`columns`: field path -> 1-based line/column of each mapping key and sequence item;
    `duplicates`: (path, line, first line) of each mapping key given twice (the last value wins,
    as in SafeConstructor)."""
    lines: dict[str, int] = {}
    columns: dict[str, int] = {}
    duplicates: list[tuple[str, int, int]] = []
    seen: set[int] = set()
    scalar_node, mapping_node, sequence_node = yaml.ScalarNode, yaml.MappingNode, yaml.SequenceNode

    def scalar(current: yaml.ScalarNode) -> Any:
        tag = current.tag
        if tag == _STR:
            return current.value
        if tag == _NULL:
            return None
        if tag == _INT:
            text = current.value
            if text.isdigit() and text.isascii() and (text[0] != "0" or len(text) == 1):
                return int(text)  # plain decimal digits (`12`): what construct_yaml_int answers, sooner
            return constructor.construct_yaml_int(current)  # 0x1F, 0o17, 012 (octal), 1_000, 1:30, +1, -1
        if tag == _FLOAT:
            return constructor.construct_yaml_float(current)
        if tag == _BOOL:
            return constructor.construct_yaml_bool(current)
        raise _NotPlain(tag)

    def value_of(current: yaml.Node, path: str) -> Any:
        kind = type(current)
        if kind is scalar_node:
            return current.value if current.tag == _STR else scalar(current)
        if id(current) in seen:  # an alias: SafeConstructor shares the object
            raise _NotPlain("alias")
        seen.add(id(current))
        if kind is mapping_node:
            if current.tag != _MAP:
                raise _NotPlain(current.tag)
            out: dict[Any, Any] = {}
            for key_node, value_node in current.value:
                if type(key_node) is not scalar_node or key_node.tag not in (_STR, _INT, _NULL, _BOOL, _FLOAT):
                    raise _NotPlain("key")
                child = f"{path}.{key_node.value}" if path else key_node.value  # issues.join_path, inlined
                mark = key_node.start_mark
                if child in lines:
                    duplicates.append((child, mark.line + 1, lines[child]))
                else:
                    lines[child] = mark.line + 1
                    columns[child] = mark.column + 1
                out[key_node.value if key_node.tag == _STR else scalar(key_node)] = value_of(value_node, child)
            return out
        if kind is sequence_node:
            if current.tag != _SEQ:
                raise _NotPlain(current.tag)
            items = []
            for i, item in enumerate(current.value):
                child = f"{path}[{i}]"
                if child not in lines:
                    mark = item.start_mark
                    lines[child], columns[child] = mark.line + 1, mark.column + 1
                items.append(value_of(item, child))
            return items
        raise _NotPlain(kind.__name__)

    try:
        return value_of(node, ""), (lines, columns, duplicates)
    except _NotPlain:
        return None
    finally:
        # value_of refers to itself through its closure: a reference cycle holding the loader and
        # every map above until the cyclic collector finds it. Broken here, so the walk frees all
        # it holds at once (and the fleet's workers can parse with the collector paused).
        value_of = None  # type: ignore[assignment]  # (a rebinding: linters misread `del` of a closure's name)
