"""Option callbacks shared by several commands."""

from __future__ import annotations

import re

import click


def regex_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> re.Pattern[str] | None:
    """A --topics REGEX option's value, compiled; a clear usage error when it is not a regex."""
    if value is None:
        return None
    try:
        return re.compile(value)
    except re.error as exc:
        raise click.BadParameter(f"{value!r} is not a valid regular expression: {exc}") from None
