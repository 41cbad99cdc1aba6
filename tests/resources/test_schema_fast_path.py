"""The schema fast path (schemas.schema_predicate, compiled once per kind) changes no finding:
`check_schema` answers exactly what jsonschema alone answers, on the corpus, the examples and
thousands of random mutations of them (wrong types, missing and unexpected fields, bad values)."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

from kafkaops.resources import load_paths
from kafkaops.resources.schema_check import _findings, check_schema
from kafkaops.resources.schemas import schema_predicate, validator_for

CORPUS = Path(__file__).parent / "corpus"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VALUES = [None, 0, -1, 1, 1.5, 2.0, 40000, True, False, "", "x", "a" * 300, "bad name!", "Retain", "Delete", [],
          [1], [[0]], {}, {"name": "x"}, "kafkaops.io/v1alpha1", "KafkaTopic", "User:a", "*", "LITERAL", "Read"]


def jsonschema_findings(kind: str, body: Any) -> list:
    """check_schema without the fast path: every jsonschema error, in the same order."""
    errors = sorted(validator_for(kind).iter_errors(body), key=lambda e: [str(p) for p in e.absolute_path])
    return [finding for err in errors for finding in _findings(err)]


def paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += paths(value, (*prefix, i))
    return out


def mutate(body: dict, rng: random.Random) -> dict:
    body = copy.deepcopy(body)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(paths(body)[1:] or [("spec",)])
        parent: Any = body
        for part in path[:-1]:
            parent = parent[part]
        action = rng.random()
        if action < 0.25 and isinstance(parent, dict):
            parent.pop(path[-1], None)
        elif action < 0.4 and isinstance(parent, dict):
            parent["unexpected"] = copy.deepcopy(rng.choice(VALUES))
        else:
            parent[path[-1]] = copy.deepcopy(rng.choice(VALUES))
    return body


def test_fast_path_gives_jsonschemas_findings_on_the_corpus_and_mutations() -> None:
    documents = [d for d in load_paths([CORPUS, EXAMPLES]).documents if isinstance(d.body, dict)]
    assert len(documents) > 50
    rng = random.Random(17)
    valid = invalid = 0
    for doc in documents:
        for body in [dict(doc.body)] + [mutate(dict(doc.body), rng) for _ in range(40)]:
            expected = jsonschema_findings(doc.kind, body)
            assert check_schema(doc.kind, body) == expected, (doc.source, body)
            assert schema_predicate(doc.kind)(body) == (not expected), (doc.source, body)
            valid, invalid = valid + (not expected), invalid + bool(expected)
    assert valid > 100 and invalid > 1000, (valid, invalid)  # both answers were exercised
