#!/bin/sh
# Install a kafkaops wheel into a virtual environment: the image's install step (Dockerfile),
# also run by tests/packaging/test_lean_install.py so the image's install is tested where no
# Docker daemon is available.
#
#   install.sh VENV WHEEL [EXTRAS]
#
# EXTRAS is empty (the operator and the CLI) or "fleet" (adds Spark, Arrow, a Java runtime and the
# fleet's JVM reader, compiled here).
# The test extras and the test doubles never go into an image. PYTHON (default python3) must have
# pip >= 22.3 (`pip --python`), so the venv itself carries no pip. PIP_INSTALL_OPTS is passed to
# `pip install` (the tests reuse a venv with "--no-deps --force-reinstall").
set -eu

venv=${1:?usage: install.sh VENV WHEEL [EXTRAS]}
wheel=${2:?usage: install.sh VENV WHEEL [EXTRAS]}
extras=${3:-}
python=${PYTHON:-python3}

case "$extras" in
  "") requirement="$wheel" ;;
  fleet) requirement="$wheel[fleet]" ;;
  *) echo "install.sh: EXTRAS must be empty or 'fleet', not '$extras' (test extras and test doubles stay out of images)" >&2
     exit 2 ;;
esac

jdk_added=
if [ "$extras" = fleet ] && ! command -v javac >/dev/null 2>&1; then
  # PySpark needs a Java runtime (17+); Debian's default-jre-headless is one. The fleet's JVM reader
  # is compiled below with the JDK, which goes again once it has (the image's one RUN: no layer keeps it).
  apt-get update
  apt-get install -y --no-install-recommends default-jre-headless default-jdk-headless
  jdk_added=1
fi

[ -x "$venv/bin/python" ] || "$python" -m venv --without-pip "$venv"
# shellcheck disable=SC2086  # PIP_INSTALL_OPTS is a list of options
"$python" -m pip --python "$venv/bin/python" install --no-cache-dir --disable-pip-version-check \
  ${PIP_INSTALL_OPTS:-} "$requirement"

if [ "$extras" = fleet ]; then
  # The desired stage's JVM reader (kafkaops/fleet/jvm_rows.py), compiled against the PySpark just
  # installed and written into the installed package; the wheel is built from the sources only.
  "$venv/bin/python" -m kafkaops.fleet.jvm_build
  if [ -n "$jdk_added" ]; then
    apt-get purge -y --auto-remove default-jdk-headless
    rm -rf /var/lib/apt/lists/*
  fi
  # Spark's class archive (kafkaops/fleet/class_archive.py), recorded with the JVM the image keeps:
  # a fleet run's JVM then maps Spark's classes from it instead of loading them from the jars.
  "$venv/bin/python" -m kafkaops.fleet.class_archive
fi
