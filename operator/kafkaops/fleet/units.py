"""Durations and sizes in human units, for the report: `retention.ms` 604800000 reads "7 days",
`segment.bytes` 1073741824 reads "1 GiB". Pure functions; the raw value is always kept beside.

A config key's unit comes from its name, as Kafka names them: `*.ms` milliseconds, `*.bytes`
bytes (`retention.bytes`, `max.message.bytes`, `log.segment.bytes`...). -1 means no limit.
"""

from __future__ import annotations

import re

_DURATIONS = ((365 * 86_400_000, "year"), (86_400_000, "day"), (3_600_000, "hour"),
              (60_000, "minute"), (1000, "second"))
_SIZES = ((1 << 60, "EiB"), (1 << 50, "PiB"), (1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


def _number(value: float) -> str:
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}".rstrip("0").rstrip(".")


def duration(ms: int) -> str:
    """604800000 -> "7 days", 5400000 -> "1.5 hours", 250 -> "250 ms", -1 -> "forever"."""
    if ms < 0:
        return "forever"
    for size, unit in _DURATIONS:
        if ms >= size:
            amount = ms / size
            if unit == "year" and amount != int(amount):
                continue  # 400 days, not 1.1 years
            text = _number(round(amount, 1))
            return f"{text} {unit}" + ("" if text == "1" else "s")
    return f"{ms} ms"


def size(n: int) -> str:
    """1073741824 -> "1 GiB", 1572864 -> "1.5 MiB", 900 -> "900 B", -1 -> "unlimited"."""
    if n < 0:
        return "unlimited"
    for unit_size, unit in _SIZES:
        if n >= unit_size:
            return f"{_number(round(n / unit_size, 1))} {unit}"
    return f"{n} B"


def unit_of(key: str) -> str | None:
    """"ms", "bytes" or None for a config key (or a field like `config.retention.ms`)."""
    if key.endswith((".ms", "_ms")):
        return "ms"
    if key.endswith(("bytes", ".bytes")):
        return "bytes"
    return None


def human(key: str, value: object) -> str | None:
    """The human reading of `value` for config `key`, or None when it has no unit or is no integer."""
    unit = unit_of(key)
    if unit is None or value is None:
        return None
    try:
        number = int(str(value).split(" ")[0])
    except ValueError:
        return None
    if 0 <= number < (1000 if unit == "ms" else 1024):
        return None  # 0 ms, 500 B: nothing to add
    return duration(number) if unit == "ms" else size(number)


def with_unit(key: str, value: object) -> str:
    """`value` followed by its human reading in parentheses: "604800000 (7 days)"."""
    text = "" if value is None else str(value)
    reading = human(key, value)
    return f"{text} ({reading})" if reading else text


_KEYED_NUMBER = re.compile(r"\b([a-z][a-z0-9._]*(?:\.ms|\.bytes|_ms|bytes))\b")
_BIG_NUMBER = re.compile(r"(?<![\w.])-?\d{4,}\b(?! \()")


def annotate(text: str) -> str:
    """Numbers after a config key in a message, annotated: "retention.ms 7776000000 is above the
    maximum 2592000000" -> "retention.ms 7776000000 (90 days) is above the maximum 2592000000 (30 days)"."""
    match = _KEYED_NUMBER.search(text or "")
    if match is None:
        return text
    key = match.group(1)

    def one(m: re.Match[str]) -> str:
        reading = human(key, m.group(0))
        return m.group(0) if reading is None else f"{m.group(0)} ({reading})"

    return text[:match.end()] + _BIG_NUMBER.sub(one, text[match.end():])
