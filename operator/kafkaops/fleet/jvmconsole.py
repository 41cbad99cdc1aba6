"""The Spark JVM's console output, filtered: what it prints on its own is noise to a user.

A local run starts the JVM (and, through it, the Python workers) with stdout and stderr on a pipe
that a thread reads: Java's incubator warning, Spark's and Hadoop's start-up chatter, log lines
below ERROR and progress bars are dropped; anything else (an error, a worker's traceback) goes to
this process's stderr. `verbose` lets everything through.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark import SparkConf

NOISE = re.compile(
    r"WARNING: Using incubator modules"
    r"|Using Spark's default log4j profile"
    r"|Setting default log level to"
    r"|To adjust logging level use sc\.setLogLevel"
    r"|For SparkR, use setLogLevel"
    r"|NativeCodeLoader"
    r"|Unable to load native-hadoop library"
    r"|\[Stage \d+:"  # a progress bar
    # log4j lines below ERROR, in Spark's default layout (26/01/02 10:00:00 WARN ...) and in ours (10:00:00 WARN ...)
    r"|(\d\d/\d\d/\d\d )?\d\d:\d\d:\d\d (WARN|INFO|DEBUG|TRACE) "
)


# HotSpot's unified-logging warnings about a class archive it cannot map (class_archive.py): the JVM
# starts without it, so the run is only slower; one line of ours says so instead of HotSpot's.
CLASS_ARCHIVE_WARNING = re.compile(r"\[[\d.]+s\]\[warning\]\[cds")
CLASS_ARCHIVE_UNUSED = ("kafkaops: the JVM could not use Spark's class archive (another JVM, Spark or class path "
                        "than it was recorded for): Spark starts without it, only slower; "
                        "`python -m kafkaops.fleet.class_archive` records it again")


def is_noise(line: str) -> bool:
    """True for a console line a user should not see unless they ask (--verbose)."""
    text = line.strip()
    return not text or NOISE.match(text) is not None


def shown(lines: Iterable[str], verbose: bool) -> Iterator[str]:
    """The console lines a user sees, in order: noise dropped, the class archive's warnings made one line."""
    archive_said = False
    for line in lines:
        if verbose:
            yield line
        elif CLASS_ARCHIVE_WARNING.match(line.strip()):
            if not archive_said:
                archive_said = True
                yield CLASS_ARCHIVE_UNUSED
        elif not is_noise(line):
            yield line


def _parts(stream: IO[bytes]) -> Iterator[str]:
    for raw in stream:
        for part in raw.decode("utf-8", "replace").split("\r"):  # progress bars redraw with \r
            text = part.rstrip("\n")
            if text.strip():
                yield text


def _pump(read_fd: int, verbose: bool) -> None:
    with os.fdopen(read_fd, "rb") as stream:
        for text in shown(_parts(stream), verbose):
            print(text, file=sys.stderr, flush=True)


def launch_gateway(conf: SparkConf, verbose: bool = False) -> Any:
    """PySpark's gateway (the driver JVM, started by spark-submit with `conf`), its console filtered."""
    from pyspark.java_gateway import launch_gateway as pyspark_launch

    read_fd, write_fd = os.pipe()
    # read from the start: a JVM that fails to start says why on this pipe
    threading.Thread(target=_pump, args=(read_fd, verbose), name="spark-console", daemon=True).start()
    try:
        return pyspark_launch(conf, popen_kwargs={"stdout": write_fd, "stderr": write_fd})
    finally:
        os.close(write_fd)  # the JVM holds its own copy: the pipe ends when the JVM does
