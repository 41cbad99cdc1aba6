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
        click.option("--connect-timeout", type=float, callback=seconds(positive=True), envvar="KAFKAOPS_CONNECT_TIMEOUT",
                     default=DEFAULT_CONNECT_TIMEOUT, metavar="SEC",
                     help=f"Connect, then ApiVersions, within [{DEFAULT_CONNECT_TIMEOUT:g}s]."),
        click.option("--retry-budget", type=float, callback=seconds(), envvar="KAFKAOPS_RETRY_BUDGET",
                     default=DEFAULT_RETRY_BUDGET, metavar="SEC",
                     help=f"Retry an unreachable cluster [{DEFAULT_RETRY_BUDGET:g}s]."),
    ]


def connection_option_list() -> Any:
    """connection_options() as one decorator."""

    def decorate(command: Any) -> Any:
        for option in reversed(connection_options()):
            command = option(command)
        return command

    return decorate


def seconds(positive: bool = False) -> Any:
    """A callback checking a number of seconds (a FloatRange would print its range in --help)."""

    def check(_ctx: click.Context, _param: click.Parameter, value: float | None) -> float | None:
        if value is not None and (value <= 0 if positive else value < 0):
            raise click.BadParameter(f"{value:g} is not {'> 0' if positive else '>= 0'} seconds")
        return value

    return check


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
    return click.option("--allow-empty", is_flag=True, help="Accept PATHs without any kafkaops manifest.")


def no_manifests_message(paths: tuple[str, ...], documents: int, errors: int) -> str | None:
    """The error for PATHs holding no kafkaops manifest at all (a typo'd directory, the wrong checkout)."""
    if documents or errors:
        return None
    return (f"no kafkaops manifests under {', '.join(paths)} (kafkaops.io/v1alpha1 documents in *.yaml/*.yml); "
            "--allow-empty accepts that on purpose")


def old_spelling(old: str, new: str, dest: str, callback_check: Any = None, **kwargs: Any) -> Any:
    """An option's old spelling: hidden from --help, still works, and says on stderr which spelling
    replaces it. `dest` is the new option's parameter name (the value lands there, checked by
    `callback_check` like the new option's)."""

    def moved(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None and value != () and value is not False:
            click.echo(f"kafkaops: {old} is deprecated; use {new} (the old spelling still works for now)", err=True)
            ctx.params[dest] = callback_check(ctx, param, value) if callback_check else value
        return value

    name = "old_" + old.lstrip("-").replace("-", "_")
    return click.option(old, name, hidden=True, expose_value=False, callback=moved, default=None, **kwargs)


def require(value: Any, option: str) -> Any:
    """A required option that has an old spelling (click cannot mark it required itself)."""
    if value is None:
        raise click.UsageError(f"Missing option '{option}'.")
    return value
