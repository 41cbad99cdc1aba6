"""`kafkaops --help` and every `kafkaops COMMAND [SUBCOMMAND] --help`, through the real entry point:
each fits a screen (<= 25 lines at 80 columns), shows examples before the options, and uses the
one CLI vocabulary (README.md, docs/cli.md); the old spellings are hidden but still work, with a
warning naming the new one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import click
import pytest
from clirun import kafkaops_command, run_kafkaops

from kafkaops.cli.main import cli

MAX_LINES = 25
OLD_SPELLINGS = ("--out ", "--out\n", "--cluster-name")  # replaced by --output-dir and --cluster
# the one vocabulary: the thing -> its only spelling
VOCABULARY = {
    "manifests": ("-f", "--filename"),
    "format": ("-o", "--output"),
    "directory written": ("--output-dir",),
    "cluster name": ("--cluster",),
    "bootstrap": ("--bootstrap-server",),
    "client properties": ("--command-config",),
}
NOT_VOCABULARY = {"--out", "--cluster-name", "--format", "--bootstrap", "--brokers-list", "--properties",
                  "--config", "--file", "--dir", "--output-directory", "--client-config"}


def commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    found: list[tuple[tuple[str, ...], click.Command]] = [(path, group)]
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found.extend(commands(command, (*path, name)))
        else:
            found.append(((*path, name), command))
    return found


ALL = commands()


def help_of(path: tuple[str, ...]) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run([*kafkaops_command(), *path, "--help"], capture_output=True, text=True, env=env,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_command_is_walked() -> None:
    names = {" ".join(p) for p, _ in ALL}
    assert {"", "plan", "apply", "validate", "export", "snapshot", "crds", "elect-leaders", "run", "dev-cluster",
            "fleet", "fleet plan"} <= names


@pytest.mark.parametrize("path", [p for p, _ in ALL], ids=lambda p: " ".join(p) or "kafkaops")
def test_help_fits_a_screen_with_examples_first(path: tuple[str, ...]) -> None:
    text = help_of(path)
    lines = text.splitlines()
    assert len(lines) <= MAX_LINES, f"{len(lines)} lines:\n{text}"
    assert "Examples:" in text, text
    options_at = text.index("Options:")
    assert text.index("Examples:") < options_at, "examples come first"
    for old in OLD_SPELLINGS:
        assert old not in text, f"{old!r} shown in:\n{text}"


@pytest.mark.parametrize("path,command", [(p, c) for p, c in ALL if p], ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_options_use_the_vocabulary(path: tuple[str, ...], command: click.Command) -> None:
    shown = {opt for param in command.params if isinstance(param, click.Option) and not param.hidden
             for opt in param.opts}
    assert not shown & NOT_VOCABULARY, f"{' '.join(path)}: {sorted(shown & NOT_VOCABULARY)}"
    spelled = {opt for opts in VOCABULARY.values() for opt in opts}
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden:
            continue
        # an option named for a vocabulary concept carries the whole spelling (-o AND --output...)
        for opts in VOCABULARY.values():
            if set(param.opts) & set(opts):
                assert set(opts) <= set(param.opts) | set(param.secondary_opts), (path, param.opts)
        long = [o for o in param.opts if o.startswith("--")]
        assert long, f"{' '.join(path)}: {param.opts} has no long spelling"
    if path in (("plan",), ("apply",), ("validate",)):
        assert {"-f", "--filename"} <= shown
    assert spelled  # the table is not empty


# --- the old spellings still work, with a warning naming the new one ----------------------------------------


def test_old_spellings_still_work_with_a_warning(tmp_path: Path) -> None:
    snapshots = tmp_path / "snaps"
    ran = run_kafkaops("snapshot", "--bootstrap-server", "127.0.0.1:1", "--cluster", "x", "--out", str(snapshots),
                       "--retry-budget", "0", tmp=tmp_path)
    assert ran.code == 1, ran  # nothing listens there; the option itself was accepted
    assert "kafkaops: --out is deprecated; use --output-dir" in ran.stderr, ran
    assert "cannot snapshot 127.0.0.1:1" in ran.stderr, ran

    ran = run_kafkaops("export", "--bootstrap-server", "127.0.0.1:1", "--cluster-name", "Bad_Name", tmp=tmp_path)
    assert ran.code == 1 and "kafkaops: --cluster-name is deprecated; use --cluster" in ran.stderr, ran
    assert "not a valid Kubernetes name" in ran.stderr, ran  # checked like the new spelling


# --- exit statuses ----------------------------------------------------------------------------------------


def test_usage_errors_exit_1_not_2(tmp_path: Path) -> None:
    for args in (["plan"], ["nosuch"], ["validate", "-o", "xml", str(tmp_path)], ["snapshot", "--cluster", "x"]):
        ran = run_kafkaops(*args, tmp=tmp_path)
        assert ran.code == 1, ran
        assert "Error:" in ran.stderr, ran
