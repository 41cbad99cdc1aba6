"""Building the fleet's JVM reader (kafkaops/fleet/jvm_build.py): the one build `make setup` and the
fleet image's install step (docker/install.sh) both run, typed as a user would type it, where it
cannot build. A build that succeeds is tests/packaging/test_lean_install.py's (install.sh's own run
of it, byte-equal to `make setup`'s jar) and every reader test's (that jar loaded into Spark)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkaops.fleet import jvm_build, jvm_rows


def _build(*args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"PATH": path} if path is not None else {})}
    return subprocess.run([sys.executable, "-m", "kafkaops.fleet.jvm_build", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_no_javac_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    out = tmp_path / jvm_rows.JAR_NAME
    run = _build("--output", str(out), path=str(tmp_path / "empty-path"))
    assert run.returncode == 1
    assert run.stderr.strip() == ("kafkaops.fleet.jvm_build: javac not found: the JVM reader needs a JDK 17 or newer "
                                  "(Debian: default-jdk-headless)")
    assert not out.exists()


def test_a_failing_compiler_is_shown_and_an_existing_jar_kept(tmp_path: Path) -> None:
    javac_double = tmp_path / "javac-double"
    javac_double.write_text("#!/bin/sh\n"
                            "echo 'ManifestRows.java:1: error: class, interface, enum, or record expected' >&2\n"
                            "exit 1\n")
    javac_double.chmod(0o755)
    out = tmp_path / jvm_rows.JAR_NAME
    out.write_bytes(b"the jar before")
    with pytest.raises(jvm_build.BuildError) as raised:
        jvm_build.build(out, javac=str(javac_double))
    assert str(raised.value) == ("javac failed on ManifestRows.java (exit 1):\n"
                                 "ManifestRows.java:1: error: class, interface, enum, or record expected")
    assert out.read_bytes() == b"the jar before"
