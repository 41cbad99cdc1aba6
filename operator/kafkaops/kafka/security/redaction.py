"""Redaction: `redact` and `RedactingFilter` scrub secret values from text, a last line of defence;
`install_redaction` puts the filter on every log record of the process."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from .settings import REDACTED, Secret, SecuritySettings, held_secret_values


# --------------------------------------------------------------------------- redaction


def redact(text: str, settings: SecuritySettings | None, extra: Iterable[str | Secret] = ()) -> str:
    """``text`` with every occurrence of a secret value replaced by ``***``.

    Secrets come from ``settings`` plus ``extra`` (e.g. a token just fetched
    from a provider). Longer secrets are replaced first so that one secret
    being a prefix of another cannot leave a tail behind.
    """
    values = set(settings.secret_values()) if settings is not None else set()
    for item in extra:
        values.add(item.reveal() if isinstance(item, Secret) else item)
    return _scrub(text, values)


def _scrub(text: str, values: Iterable[str]) -> str:
    for value in sorted((v for v in values if v), key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


class RedactingFilter(logging.Filter):
    """A logging filter that scrubs secret values from messages (and from the traceback of a
    logged exception): those of ``settings``, or, without settings, every secret a
    `SecuritySettings` of this process has held (what `install_redaction` uses)."""

    def __init__(self, settings: SecuritySettings | None = None, name: str = "") -> None:
        super().__init__(name)
        self._settings = settings

    def filter(self, record: logging.LogRecord) -> bool:
        values = self._settings.secret_values() if self._settings is not None else held_secret_values()
        if not values:
            return True
        message = record.getMessage()
        cleaned = _scrub(message, values)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            # formatters print exc_text when it is set (logging.Formatter caches it there)
            record.exc_text = _scrub(_TRACEBACKS.formatException(record.exc_info), values)
        return True


_TRACEBACKS = logging.Formatter()


class _RedactingRecordFactory:
    """Wraps logging's record factory: every record is scrubbed as it is made, before any filter,
    handler or Kubernetes Event poster sees it."""

    def __init__(self, inner: Callable[..., logging.LogRecord]) -> None:
        self.inner = inner
        self.redactor = RedactingFilter()

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.inner(*args, **kwargs)
        try:
            self.redactor.filter(record)
        except Exception:  # noqa: BLE001
            # The message's arguments do not format (a bug in the logging call): logging reports
            # that itself, with the call's context, when a handler emits the record; logging it from
            # here would recurse.
            pass
        return record


def install_redaction() -> RedactingFilter:
    """Scrub every secret a `SecuritySettings` of this process holds or held from every log record
    the process makes: every logger (``kafkaops.*``, ``kopf.objects`` — whose records kopf also
    posts as Kubernetes Events —, ``asyncio``, ...), every handler, also those added later. Done by
    wrapping logging's record factory in a `RedactingFilter`; idempotent. The CLI's entry point
    (and so the operator, ``kafkaops run``) calls it first. Returns the filter in use."""
    current = logging.getLogRecordFactory()
    if isinstance(current, _RedactingRecordFactory):
        return current.redactor
    factory = _RedactingRecordFactory(current)
    logging.setLogRecordFactory(factory)
    return factory.redactor


def uninstall_redaction() -> None:
    """Undo `install_redaction` (tests)."""
    current = logging.getLogRecordFactory()
    if isinstance(current, _RedactingRecordFactory):
        logging.setLogRecordFactory(current.inner)
