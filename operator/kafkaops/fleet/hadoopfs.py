"""Small files on any Hadoop-compatible path (file:, hdfs:, s3a:, abfs:, gs: ...) through the
driver JVM's Hadoop FileSystem: snapshot headers, the policy file, report.html and summary.md,
and the size of the desired tree (to choose how many partitions its documents are kept in).

Only the driver uses these, for small files; the big tables are read and written by Spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MAX_SMALL_FILE = 16 * 1024 * 1024


def _fs(spark: SparkSession, path: str) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm  # noqa: SLF001 - py4j gateway, the way to the Hadoop API
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return hpath.getFileSystem(conf), hpath


def qualified(spark: SparkSession, path: str) -> str:
    """`path` with its scheme (a local path becomes file:/...)."""
    fs, hpath = _fs(spark, path)
    return str(fs.makeQualified(hpath).toString())


def exists(spark: SparkSession, path: str) -> bool:
    fs, hpath = _fs(spark, path)
    return bool(fs.exists(hpath))


def is_dir(spark: SparkSession, path: str) -> bool:
    fs, hpath = _fs(spark, path)
    return bool(fs.exists(hpath) and fs.getFileStatus(hpath).isDirectory())


def list_dirs(spark: SparkSession, path: str) -> list[str]:
    """The names of the directories directly under `path`, sorted (hidden and _ ones skipped)."""
    fs, hpath = _fs(spark, path)
    names = [str(status.getPath().getName()) for status in fs.listStatus(hpath) if status.isDirectory()]
    return sorted(n for n in names if not n.startswith((".", "_")))


def total_bytes(spark: SparkSession, paths: list[str]) -> int | None:
    """The size of everything under `paths` (files or directories), or None when a path cannot be
    measured (missing, no permission): a figure to size partitions by, never a check."""
    try:
        total = 0
        for path in paths:
            fs, hpath = _fs(spark, path)
            total += int(fs.getContentSummary(hpath).getLength())
        return total
    except Exception:  # noqa: BLE001 - py4j errors of any FileSystem: the caller does without
        return None


def read_bytes(spark: SparkSession, path: str, limit: int = MAX_SMALL_FILE) -> bytes:
    fs, hpath = _fs(spark, path)
    length = int(fs.getFileStatus(hpath).getLen())
    if length > limit:
        raise ValueError(f"{length} bytes, more than the {limit} a small file may have")
    stream = fs.open(hpath)
    try:
        jvm = spark.sparkContext._jvm  # noqa: SLF001
        data = jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
    finally:
        stream.close()
    return bytes(data)


def read_text(spark: SparkSession, path: str) -> str:
    return read_bytes(spark, path).decode("utf-8")


def write_text(spark: SparkSession, path: str, text: str) -> None:
    fs, hpath = _fs(spark, path)
    stream = fs.create(hpath, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


def mkdirs(spark: SparkSession, path: str) -> None:
    fs, hpath = _fs(spark, path)
    fs.mkdirs(hpath)


def local_path(path: str) -> str | None:
    """The local filesystem path of `path` (no scheme, or file:), None when it is on another filesystem."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    return None if "://" in path else path


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *(p.strip("/") for p in parts)])
