"""Redaction: `redact` and `RedactingFilter` scrub secret values from text, a last line of defence."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from .settings import REDACTED, Secret, SecuritySettings


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
    for value in sorted((v for v in values if v), key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


class RedactingFilter(logging.Filter):
    """A logging filter that scrubs the settings' secret values from messages."""

    def __init__(self, settings: SecuritySettings, name: str = "") -> None:
        super().__init__(name)
        self._settings = settings

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message, self._settings)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
