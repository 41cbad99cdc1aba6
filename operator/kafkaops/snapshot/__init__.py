"""Snapshots of a cluster's observed state as Parquet tables (`kafkaops snapshot`).

- format.py: the format's contract in code (FORMAT, VERSION, SCHEMAS, read_header); it
  imports only pyarrow, so readers (the fleet pipeline) need nothing else of kafkaops;
- take.py: take_snapshot(admin, batcher, cluster) reads a cluster into a Snapshot;
- write.py: write_snapshot(snapshot, out_dir) writes it to out_dir/<cluster>/.

README.md next to this file documents the format.
"""
