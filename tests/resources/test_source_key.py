"""Source, the key of the engine's per-resource maps, hashes once and stays a plain value: equal
sources are equal keys whether hashed yet or not, its repr and order ignore the cached hash, and a
source pickled into another process (the fleet's Spark workers) is hashed there afresh."""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys

from kafkaops.resources.documents import Source


def test_equal_sources_are_one_key_hashed_or_not() -> None:
    hashed = Source("a.yaml", 3, "KafkaTopic", None, "orders")
    table = {hashed: "first"}  # hashed, and the hash kept
    fresh = Source("a.yaml", 3, "KafkaTopic", None, "orders")
    assert fresh == hashed and hash(fresh) == hash(hashed)
    assert table[fresh] == "first"
    assert Source("a.yaml", 4, "KafkaTopic", None, "orders") not in table
    assert Source("a.yaml", 3, "KafkaTopic", "ns", "orders") not in table
    renamed = dataclasses.replace(hashed, name="payments")  # a copy does not inherit the hash
    assert renamed not in table and hash(renamed) == hash(Source("a.yaml", 3, "KafkaTopic", None, "payments"))


def test_repr_and_order_ignore_the_cached_hash() -> None:
    a, b = Source("a.yaml", 1, "KafkaTopic", None, "x"), Source("a.yaml", 2, "KafkaTopic", None, "x")
    hash(b)
    assert repr(a) == "Source(file='a.yaml', index=1, kind='KafkaTopic', namespace=None, name='x')"
    assert sorted([b, a]) == [a, b] and a < b
    assert str(b) == "a.yaml[2] KafkaTopic/x"


def test_a_source_pickled_into_another_process_is_hashed_there() -> None:
    source = Source("a.yaml", 3, "KafkaTopic", "team", "orders")
    hash(source)  # cached here, with this process's string hashes
    script = (
        "import pickle, sys\n"
        "from kafkaops.resources.documents import Source\n"
        "loaded = pickle.loads(sys.stdin.buffer.read())\n"
        "table = {Source('a.yaml', 3, 'KafkaTopic', 'team', 'orders'): 'found'}\n"
        "print(table.get(loaded, 'missing'), loaded == Source('a.yaml', 3, 'KafkaTopic', 'team', 'orders'))\n"
    )
    seed = "1" if os.environ.get("PYTHONHASHSEED") != "1" else "2"  # another process's string hashes
    done = subprocess.run([sys.executable, "-c", script], input=pickle.dumps(source), capture_output=True,
                          env={**os.environ, "PYTHONHASHSEED": seed}, check=True)
    assert done.stdout.decode().split() == ["found", "True"], done.stderr.decode()
