"""Duration strings such as "30s", "5m", "1h30m", "500ms"."""

from __future__ import annotations

import re

_PART = re.compile(r"([0-9]+)(ms|s|m|h)")
_WHOLE = re.compile(r"^(?:[0-9]+(?:ms|s|m|h))+$")
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds in `text`; ValueError unless it is a positive duration like 30s, 5m, 1h30m."""
    if not isinstance(text, str) or not _WHOLE.match(text):
        raise ValueError(f"{text!r} is not a duration like 30s, 5m, 1h or 1h30m (units: ms, s, m, h)")
    seconds = sum(int(number) * _SECONDS[unit] for number, unit in _PART.findall(text))
    if seconds <= 0:
        raise ValueError(f"{text!r} is not a positive duration")
    return seconds
