"""write_snapshot: a Snapshot to ``OUT/<cluster>/`` (header.json and one Parquet file per table).

The files are written into a hidden temporary directory next to the target
(``OUT/.<cluster>.tmp-XXXX``), which is then renamed into place; an older snapshot of
the same cluster is renamed aside first and removed after. Readers therefore see
either the old snapshot or the new one, whole, never a half-written one (except
for the instant between the two renames, when there is none). Names starting with
``.`` are never snapshots; readers skip them.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kafkaops.snapshot.format import HEADER_FILE, SCHEMAS, TABLES, snapshot_dir, table_file
from kafkaops.snapshot.take import Snapshot


def to_table(snapshot: Snapshot, table: str) -> pa.Table:
    """One table of the snapshot as an Arrow table with exactly its schema in SCHEMAS."""
    return pa.Table.from_pylist(list(snapshot.rows(table)), schema=SCHEMAS[table])


def header_json(snapshot: Snapshot) -> str:
    return json.dumps(dict(snapshot.header), indent=2, ensure_ascii=False) + "\n"


def write_snapshot(snapshot: Snapshot, out_dir: str | Path) -> Path:
    """Write `snapshot` to ``out_dir/<cluster>/``, replacing an older snapshot of that cluster.

    Returns the snapshot directory. Raises OSError when it cannot be written (nothing is
    left behind but the older snapshot, untouched), ValueError for a cluster name that
    cannot name a directory.
    """
    target = snapshot_dir(out_dir, snapshot.cluster)
    tables = {table: to_table(snapshot, table) for table in TABLES}  # schema errors before touching disk
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    work = _fresh_dir(parent, f".{target.name}.tmp-")
    try:
        for table, data in tables.items():
            pq.write_table(data, work / table_file(table))
        (work / HEADER_FILE).write_text(header_json(snapshot), "utf-8")
        _replace_dir(work, target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return target


def _replace_dir(new: Path, target: Path) -> None:
    if not target.exists():
        os.rename(new, target)
        return
    old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:12]}"
    os.rename(target, old)
    try:
        os.rename(new, target)
    except BaseException:
        os.rename(old, target)  # put the older snapshot back
        raise
    shutil.rmtree(old, ignore_errors=True)


def _fresh_dir(parent: Path, prefix: str) -> Path:
    """A new empty directory with the usual permissions (tempfile.mkdtemp's are 0700)."""
    while True:
        path = parent / f"{prefix}{uuid.uuid4().hex[:12]}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
