"""Commands that need an optional part of kafkaops fail with one clear line when it is not installed.

The plain install (`pip install kafkaops`, the image) is the CLI and the operator. Spark and Arrow
come with the `fleet` extra (`kafkaops fleet`, `kafkaops snapshot`); the test doubles behind
`kafkaops dev-cluster` and the demos ship only in a source checkout, with the `dev` extra's
dependencies (`pip install -e '.[dev]'`). A command calls `require_*` before its lazy imports;
the checks only look modules up (importlib.util.find_spec), they never import them.
"""

from __future__ import annotations

import importlib.util

import click

EXTRA_MODULES = {
    "fleet": ("pyspark", "pyarrow"),
    "dev": ("kmock",),
}
TEST_DOUBLES = "kafkaops.testing"


class MissingExtra(click.ClickException):
    """Exit status 1 and one line: which command, which extra, the pip command that installs it."""


def missing_modules(modules: tuple[str, ...]) -> list[str]:
    return [name for name in modules if importlib.util.find_spec(name) is None]


def require_extra(command: str, extra: str) -> None:
    """Raise MissingExtra unless every module of `extra` can be imported."""
    if missing_modules(EXTRA_MODULES[extra]):
        raise MissingExtra(f"kafkaops {command} needs the '{extra}' extra: pip install 'kafkaops[{extra}]'")


def require_test_doubles(command: str) -> None:
    """The test doubles are not in the wheel (nor the image): they need a source checkout."""
    if importlib.util.find_spec(TEST_DOUBLES) is None:
        raise MissingExtra(f"kafkaops {command} needs the test doubles, which ship only in a source checkout: "
                           "pip install -e '.[dev]' in a clone of kafkaops")
