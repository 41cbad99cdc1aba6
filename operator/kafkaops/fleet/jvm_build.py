"""Build the fleet's JVM reader: `jvm/ManifestRows.java` compiled into `jvm/kafkaops-fleet.jar`.

    python -m kafkaops.fleet.jvm_build [--output PATH]

javac compiles the source against the jars of the PySpark installed beside this package (Spark
and the SnakeYAML it ships), so the reader always matches the Spark that loads it. The jar is
written where `jvm_rows.jar_path()` looks (or to --output), replaced in one step, with fixed
timestamps: the same source and JDK give the same bytes. The one build of it: `make setup` runs
this in a checkout, and docker/install.sh in the `EXTRAS=fleet` image, whose wheel is built from
the sources only (docs/deploying.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from kafkaops.fleet.jvm_rows import jar_path

SOURCE = Path(__file__).parent / "jvm" / "ManifestRows.java"
RELEASE = "17"  # Spark 4's own minimum
_MANIFEST = "Manifest-Version: 1.0\r\nCreated-By: kafkaops.fleet.jvm_build\r\n\r\n"
_EPOCH = (1980, 1, 1, 0, 0, 0)  # zip's earliest time: a reproducible jar


class BuildError(RuntimeError):
    """The reader cannot be built here; the message says what is missing."""


def spark_jars() -> Path:
    try:
        import pyspark
    except ImportError as exc:
        raise BuildError("the JVM reader is compiled against PySpark's jars: pip install 'kafkaops[fleet]'") from exc
    jars = Path(pyspark.__file__).parent / "jars"
    if not any(jars.glob("spark-sql_*.jar")):
        raise BuildError(f"no Spark SQL jar in {jars}: PySpark's install is incomplete")
    return jars


def build(output: Path | None = None, javac: str | None = None) -> Path:
    """Compile the reader and write its jar; returns the jar's path."""
    output = jar_path() if output is None else output
    javac = javac or shutil.which("javac")
    if javac is None:
        raise BuildError("javac not found: the JVM reader needs a JDK 17 or newer (Debian: default-jdk-headless)")
    jars = spark_jars()
    with tempfile.TemporaryDirectory(prefix="kafkaops-jvm-") as tmp:
        classes = Path(tmp) / "classes"
        run = subprocess.run([javac, "--release", RELEASE, "-nowarn", "-d", str(classes), "-cp", f"{jars}/*",
                              str(SOURCE)], capture_output=True, text=True)
        if run.returncode != 0:
            raise BuildError(f"javac failed on {SOURCE.name} (exit {run.returncode}):\n{run.stderr.strip()}")
        output.parent.mkdir(parents=True, exist_ok=True)
        partial = output.with_name(output.name + ".partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr(zipfile.ZipInfo("META-INF/MANIFEST.MF", _EPOCH), _MANIFEST)
            for path in sorted(classes.rglob("*.class")):
                jar.writestr(zipfile.ZipInfo(path.relative_to(classes).as_posix(), _EPOCH), path.read_bytes(),
                             zipfile.ZIP_DEFLATED)
        os.replace(partial, output)
    return output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkaops.fleet.jvm_build", description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, help=f"where to write the jar (default: {jar_path()})")
    args = parser.parse_args(argv)
    try:
        built = build(args.output)
    except BuildError as exc:
        print(f"kafkaops.fleet.jvm_build: {exc}", file=sys.stderr)
        return 1
    print(f"built {built}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
