"""Option callbacks shared by several commands."""

from __future__ import annotations

import re
from typing import Any

import click

# The CLI fails fast on a cluster it cannot reach (the library's defaults retry for the operator).
DEFAULT_CONNECT_TIMEOUT = 2.0
DEFAULT_RETRY_BUDGET = 1.0


def connection_options() -> list[Any]:
    """--connect-timeout and --retry-budget (also $KAFKAOPS_CONNECT_TIMEOUT, $KAFKAOPS_RETRY_BUDGET)."""
    return [
        click.option("--connect-timeout", type=click.FloatRange(min=0, min_open=True), envvar="KAFKAOPS_CONNECT_TIMEOUT",
                     default=DEFAULT_CONNECT_TIMEOUT, show_default=True, metavar="SECONDS",
                     help="Per broker: TCP/TLS connect, then the ApiVersions answer, each within this."),
        click.option("--retry-budget", type=click.FloatRange(min=0), envvar="KAFKAOPS_RETRY_BUDGET",
                     default=DEFAULT_RETRY_BUDGET, show_default=True, metavar="SECONDS",
                     help="How long to keep retrying a cluster none of whose brokers answers."),
    ]


def connection_overrides(connect_timeout: float, retry_budget: float) -> dict[str, object]:
    """ClientSettings overrides for the two options above."""
    return {"connect_timeout": connect_timeout, "connect_retry_budget": retry_budget}


def regex_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> re.Pattern[str] | None:
    """A --topics REGEX option's value, compiled; a clear usage error when it is not a regex."""
    if value is None:
        return None
    try:
        return re.compile(value)
    except re.error as exc:
        raise click.BadParameter(f"{value!r} is not a valid regular expression: {exc}") from None


def allow_empty_option() -> Any:
    return click.option("--allow-empty", is_flag=True,
                        help="Accept PATHs that hold no kafkaops manifest (on purpose, e.g. to --prune everything).")


def no_manifests_message(paths: tuple[str, ...], documents: int, errors: int) -> str | None:
    """The error for PATHs holding no kafkaops manifest at all (a typo'd directory, the wrong checkout)."""
    if documents or errors:
        return None
    return (f"no kafkaops manifests under {', '.join(paths)} (kafkaops.io/v1alpha1 documents in *.yaml/*.yml); "
            "--allow-empty accepts that on purpose")
