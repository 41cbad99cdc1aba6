"""The JSON Schemas in schemas/ — one per kind plus common.json — loaded once.

They are the single source of truth: validation runs them with jsonschema
(Draft 2020-12) and crds.py turns them into the CRDs' openAPIV3Schema.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources as importlib_resources
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from kafkaops.resources.kinds import KINDS

SCHEMA_FILES = ("common.json", *(info.schema_file for info in KINDS.values()))


@cache
def _documents() -> dict[str, dict[str, Any]]:
    folder = importlib_resources.files("kafkaops.resources").joinpath("schemas")
    return {name: json.loads(folder.joinpath(name).read_text("utf-8")) for name in SCHEMA_FILES}


@cache
def registry() -> Registry:
    """A referencing registry holding every schema under its $id."""
    return Registry().with_resources(
        (doc["$id"], Resource(contents=doc, specification=DRAFT202012)) for doc in _documents().values()
    )


def schema_for(kind: str) -> dict[str, Any]:
    """The JSON Schema of a whole `kind` document (do not mutate it)."""
    return _documents()[KINDS[kind].schema_file]


def common_schema() -> dict[str, Any]:
    return _documents()["common.json"]


@cache
def validator_for(kind: str) -> Draft202012Validator:
    schema = schema_for(kind)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, registry=registry())
