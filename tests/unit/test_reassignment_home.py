"""One home for partition reassignment (issue 15): checked over the source tree with ast.

Outside `reconcile/reassign/` nothing sends AlterPartitionReassignments or
ListPartitionReassignments, nor sets or removes a replication throttle. `kafka/` offers the calls
(`AdminClient`) and the Batcher's read lane (`Batcher.list_reassignments`, observe's bulk read of
what is moving, shared by concurrent reconciles); those are the client layer, not a second driver.
"""

from __future__ import annotations

import ast
from pathlib import Path

import kafkaops

SOURCE = Path(kafkaops.__file__).resolve().parent
HOME = SOURCE / "reconcile" / "reassign"
CLIENT = SOURCE / "kafka"
# the calls that start, follow, cancel or clean up moves
DRIVING = frozenset({"alter_partition_reassignments", "list_partition_reassignments",
                     "set_throttles", "cleanup_throttles", "run_reassignment"})


def driving_calls(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every call or import of a DRIVING name in a module."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name in DRIVING:
                found.append((node.lineno, name))
        elif isinstance(node, ast.ImportFrom):
            found.extend((node.lineno, alias.name) for alias in node.names if alias.name in DRIVING)
    return sorted(found)


def test_the_checker_finds_a_driving_call():
    planted = ast.parse("async def f(admin):\n    await admin.alter_partition_reassignments({})\n"
                        "from kafkaops.reconcile.reassign import cleanup_throttles\n"
                        "x = admin.list_partition_reassignments\n")
    assert driving_calls(planted) == [(2, "alter_partition_reassignments"), (3, "cleanup_throttles")]


def test_nothing_outside_reconcile_reassign_drives_reassignments():
    offenders = []
    for path in sorted(SOURCE.rglob("*.py")):
        if path.is_relative_to(HOME) or path.is_relative_to(CLIENT):
            continue
        for line, name in driving_calls(ast.parse(path.read_text(), str(path))):
            offenders.append(f"{path.relative_to(SOURCE)}:{line}: {name}")
    assert offenders == [], "reassignments are driven only by reconcile/reassign/ (the ReassignmentManager)"


def test_the_engine_cleans_no_throttle_itself():
    engine = ast.parse((SOURCE / "reconcile" / "engine.py").read_text())
    names = {n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(engine)
             if isinstance(n, (ast.Attribute, ast.Name))}
    assert not names & {"cleanup_throttles", "ThrottleRecord", "start_run", "MoveBudget"}
    assert "clean_leftovers" in names  # it asks the cluster's manager
