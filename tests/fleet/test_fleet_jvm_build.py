"""Building the fleet's JVM reader (kafkaops/fleet/jvm_build.py): the one build `make setup` and the
fleet image's install step (docker/install.sh) both run, typed as a user would type it."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from kafkaops.fleet import jvm_build, jvm_rows

pytestmark = pytest.mark.slow  # javac: about 5 s


def _build(*args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"PATH": path} if path is not None else {})}
    return subprocess.run([sys.executable, "-m", "kafkaops.fleet.jvm_build", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_builds_the_reader_into_a_reproducible_jar(tmp_path: Path) -> None:
    out = tmp_path / "out" / jvm_rows.JAR_NAME
    run = _build("--output", str(out))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"built {out}"
    with zipfile.ZipFile(out) as jar:
        infos = jar.infolist()
        names = {i.filename for i in infos}
        manifest = jar.read("META-INF/MANIFEST.MF").decode()
    assert "kafkaops/fleet/TopicRows.class" in names
    assert jvm_rows.CLASS_NAME.replace(".", "/") + ".class" in names
    assert manifest.startswith("Manifest-Version: 1.0\r\n")
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}  # no build time in it: the same bytes each time
    assert not list(out.parent.glob("*.partial"))
    # `make setup` ran the same build for jar_path(): the same source and JDK gave the same bytes
    assert jvm_rows.jar_path().read_bytes() == out.read_bytes(), "the jar is older than TopicRows.java: make setup"


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
                            "echo 'TopicRows.java:1: error: class, interface, enum, or record expected' >&2\n"
                            "exit 1\n")
    javac_double.chmod(0o755)
    out = tmp_path / jvm_rows.JAR_NAME
    out.write_bytes(b"the jar before")
    with pytest.raises(jvm_build.BuildError) as raised:
        jvm_build.build(out, javac=str(javac_double))
    assert str(raised.value) == ("javac failed on TopicRows.java (exit 1):\n"
                                 "TopicRows.java:1: error: class, interface, enum, or record expected")
    assert out.read_bytes() == b"the jar before"
