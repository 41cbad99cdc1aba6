"""Operator logging policy: ERROR is for what a person must look at.

kopf logs every temporary handler failure at ERROR and every success at INFO, per resource. For
kafkaops those are expected (a deletion waiting for its cluster, a throttled request retried, a
resource reconciled): the state changes that matter are logged once per cluster by
`kafkaops.operator` (connected, down, resources released to run) and posted as Events on the
resource. This filter drops kopf's per-resource lines, or keeps them at DEBUG with `--verbose`.
"""

from __future__ import annotations

import logging

EXPECTED = ("failed temporarily", " succeeded.", " is processed: ")


class ExpectedWaits(logging.Filter):
    def __init__(self, verbose: bool = False) -> None:
        super().__init__()
        self.verbose = verbose

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.ERROR or not any(m in record.getMessage() for m in EXPECTED):
            return True
        if not self.verbose:
            return False
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


def install(verbose: bool) -> None:
    """Attach the filter to kopf's per-object logger (call after kopf.configure)."""
    logger = logging.getLogger("kopf.objects")
    for existing in [f for f in logger.filters if isinstance(f, ExpectedWaits)]:
        logger.removeFilter(existing)
    logger.addFilter(ExpectedWaits(verbose))
