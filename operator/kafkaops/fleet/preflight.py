"""`kafkaops fleet plan`'s arguments, checked before Spark starts (a JVM takes seconds to start).

Pure Python on local paths (no scheme, or `file:`): the manifests exist, the snapshots exist, the
policy file parses. A path on another filesystem (hdfs://, s3a://...) is checked by the pipeline
once Spark runs, as before. Each problem is one line naming the option, the path and the reason.

The same rules as the pipeline's readers: manifests are `*.yaml`/`*.yml`, found recursively;
names starting with `.` or `_` are skipped (Spark's hidden-file rule); a snapshot is
`<observed>/<cluster>/header.json`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from kafkaops.fleet.errors import FleetError, PolicyError
from kafkaops.fleet.hadoopfs import local_path
from kafkaops.fleet.policy import Policy, parse_policy

MANIFEST_SUFFIXES = (".yaml", ".yml")
SNAPSHOT_HEADER = "header.json"


@dataclass(frozen=True)
class CheckedInputs:
    """What the checks found: the parsed policy (local file) and the bytes of local input (None
    when some input is remote), which decides whether the run is small."""

    policy: Policy | None
    input_bytes: int | None


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def _walk(root: str):
    """(path, size) of every file under root, skipping hidden names (files and directories)."""
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not _hidden(d))
        for name in sorted(files):
            if not _hidden(name):
                full = os.path.join(directory, name)
                yield full, os.path.getsize(full)


def check_desired(path: str) -> int:
    """The bytes of manifests under a local `-f/--filename` path; FleetError when there are none."""
    if not os.path.exists(path):
        raise FleetError(f"-f {path}: no such file or directory")
    if os.path.isfile(path):
        if not path.endswith(MANIFEST_SUFFIXES):
            raise FleetError(f"-f {path}: not a manifest file (*.yaml or *.yml)")
        return os.path.getsize(path)
    sizes = [size for name, size in _walk(path) if name.endswith(MANIFEST_SUFFIXES)]
    if not sizes:
        raise FleetError(f"-f {path}: no manifests under it (no *.yaml or *.yml files)")
    return sum(sizes)


def check_observed(path: str) -> int:
    """The bytes of the snapshots under a local `--observed` path; FleetError when it holds none."""
    if not os.path.exists(path):
        raise FleetError(f"--observed {path}: no such directory")
    if not os.path.isdir(path):
        raise FleetError(f"--observed {path}: not a directory (it holds one directory per cluster, as "
                         "`kafkaops snapshot` writes them)")
    clusters = [name for name in sorted(os.listdir(path))
                if not _hidden(name) and os.path.isfile(os.path.join(path, name, SNAPSHOT_HEADER))]
    if not clusters:
        raise FleetError(f"--observed {path}: no snapshots in it (expected {os.path.join(path, '<cluster>', SNAPSHOT_HEADER)}, "
                         "as `kafkaops snapshot` writes them)")
    return sum(size for name in clusters for _, size in _walk(os.path.join(path, name)))


def check_policy(path: str, name: str | None = None) -> Policy:
    """The parsed policy file at local `path` (called `name` in errors, default `path`); PolicyError
    naming the file (and the field) otherwise."""
    name = name or path
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise PolicyError(f"--policy {name}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"--policy {name}: cannot read it: {exc}") from None
    return parse_policy(text, name)


def check_output_dir(path: str) -> None:
    if os.path.exists(path) and not os.path.isdir(path):
        raise FleetError(f"--output-dir {path}: exists and is not a directory")


def check(desired: Sequence[str], observed: str, policy: str | None, out: str) -> CheckedInputs:
    """Every local argument checked; FleetError with one line per problem found."""
    problems: list[str] = []
    parsed: Policy | None = None
    total: int | None = 0

    def add(size: int | None) -> None:
        nonlocal total
        total = None if total is None or size is None else total + size

    for path in desired:
        local = local_path(path)
        try:
            add(check_desired(local) if local is not None else None)
        except FleetError as exc:
            problems.append(str(exc))
    local = local_path(observed)
    try:
        add(check_observed(local) if local is not None else None)
    except FleetError as exc:
        problems.append(str(exc))
    if policy is not None and (local := local_path(policy)) is not None:
        try:
            parsed = check_policy(local, policy)
        except PolicyError as exc:
            problems.append(str(exc))
    if (local := local_path(out)) is not None:
        try:
            check_output_dir(local)
        except FleetError as exc:
            problems.append(str(exc))
    if problems:
        raise FleetError("\n".join(problems))
    return CheckedInputs(parsed, total)
