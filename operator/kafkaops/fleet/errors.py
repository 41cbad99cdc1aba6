"""Errors and input problems of the fleet pipeline.

A FleetError stops the run (no desired path, an unreadable policy file, an output
directory that cannot be written). Everything else that is wrong with the input
(an unparseable manifest, a snapshot of an unknown format version) is an
InputProblem: it names the file, is reported, and the rest of the fleet goes on.
"""

from __future__ import annotations

from kafkaops.frozen import frozen


class FleetError(Exception):
    """The pipeline cannot run at all; the message says why (and names the file)."""


class PolicyError(FleetError):
    """The policy file is missing, not YAML, or breaks the policy schema."""


@frozen
class InputProblem:
    """Something wrong with one input file. `cluster` is set when a whole cluster was skipped."""

    stage: str  # "desired" | "observed"
    file: str
    rule: str
    message: str
    cluster: str | None = None
    severity: str = "error"

    def __str__(self) -> str:
        where = f" (cluster {self.cluster!r} skipped)" if self.cluster and self.stage == "observed" else ""
        return f"{self.file}: {self.message} ({self.rule}){where}"


# Rule names of snapshot problems.
SNAPSHOT_UNREADABLE = "SnapshotUnreadable"
SNAPSHOT_UNKNOWN_FORMAT = "SnapshotUnknownFormat"
SNAPSHOT_MISSING_TABLE = "SnapshotMissingTable"
SNAPSHOT_BAD_TABLE = "SnapshotBadTable"
SNAPSHOT_CLUSTER_MISMATCH = "SnapshotClusterMismatch"
SNAPSHOT_DUPLICATE_CLUSTER = "SnapshotDuplicateCluster"
NO_SNAPSHOT = "NoSnapshot"
