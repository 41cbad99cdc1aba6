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
from typing import TYPE_CHECKING, Any

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


def is_noise(line: str) -> bool:
    """True for a console line a user should not see unless they ask (--verbose)."""
    text = line.strip()
    return not text or NOISE.match(text) is not None


def _pump(read_fd: int, verbose: bool) -> None:
    with os.fdopen(read_fd, "rb") as stream:
        for raw in stream:
            for part in raw.decode("utf-8", "replace").split("\r"):  # progress bars redraw with \r
                if verbose or not is_noise(part):
                    text = part.rstrip("\n")
                    if text.strip():
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
