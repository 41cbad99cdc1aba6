"""The Dockerfile's assumptions, checked without a Docker daemon (none on these machines).

What a build would prove and can be proved here: the base is pinned by digest, the final stage runs as
the UID/GID the Deployment's securityContext expects, with the Deployment's command, writing nowhere but
/tmp, installing only the wheel (optionally with the 'fleet' extra) through docker/install.sh, which
test_lean_install.py runs for real. `make image` says clearly why it cannot build here.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
DIGEST = re.compile(r"^[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str


def parse(text: str) -> list[Instruction]:
    """Dockerfile instructions: comments dropped, backslash continuations joined."""
    out: list[Instruction] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1].rstrip() + " "
            continue
        full = pending + stripped
        pending = ""
        keyword, _, args = full.partition(" ")
        out.append(Instruction(keyword.upper(), args.strip()))
    assert not pending, "dangling line continuation"
    return out


def stages(instructions: list[Instruction]) -> tuple[dict[str, str], list[list[Instruction]]]:
    """Global ARG defaults (before the first FROM) and the stages, each starting with its FROM."""
    args: dict[str, str] = {}
    result: list[list[Instruction]] = []
    for ins in instructions:
        if ins.keyword == "FROM":
            result.append([ins])
        elif result:
            result[-1].append(ins)
        elif ins.keyword == "ARG":
            name, _, default = ins.args.partition("=")
            args[name] = default
    return args, result


def expand(value: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), m.group(0)), value)


@pytest.fixture(scope="module")
def dockerfile() -> tuple[dict[str, str], list[list[Instruction]]]:
    return stages(parse(DOCKERFILE.read_text("utf-8")))


@pytest.fixture(scope="module")
def deployment() -> dict:
    (doc,) = [d for d in yaml.safe_load_all((REPO / "manifests" / "deployment.yaml").read_text()) if d]
    return doc


def final(dockerfile: tuple[dict[str, str], list[list[Instruction]]]) -> list[Instruction]:
    return dockerfile[1][-1]


def only(stage: list[Instruction], keyword: str) -> Instruction:
    (ins,) = [i for i in stage if i.keyword == keyword]
    return ins


def test_parser_joins_continuations_and_skips_comments() -> None:
    parsed = parse("# c\nARG A=1\nFROM x@sha256:" + "a" * 64 + " AS b\nRUN one \\\n  # inner\n  two\nUSER 1:1\n")
    assert [i.keyword for i in parsed] == ["ARG", "FROM", "RUN", "USER"]
    assert parsed[2].args == "one two"


def test_every_base_is_pinned_by_digest(dockerfile) -> None:
    args, all_stages = dockerfile
    assert len(all_stages) >= 2  # multi-stage: the builder's tools never reach the image
    assert DIGEST.match(args["PYTHON_IMAGE"]) and args["PYTHON_IMAGE"].startswith("python:3.12-slim@")
    for stage in all_stages:
        image = expand(stage[0].args.split()[0], args)
        assert DIGEST.match(image), image


def test_final_stage_user_matches_the_deployment(dockerfile, deployment) -> None:
    user = only(final(dockerfile), "USER").args
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and gid.isdigit(), "numeric, so runAsNonRoot can be verified by the kubelet"
    pod_security = deployment["spec"]["template"]["spec"]["securityContext"]
    assert int(uid) == pod_security["runAsUser"] != 0
    assert int(gid) == pod_security["runAsGroup"]


def test_entrypoint_and_command_match_the_deployment(dockerfile, deployment) -> None:
    stage = final(dockerfile)
    entrypoint = json.loads(only(stage, "ENTRYPOINT").args)
    cmd = json.loads(only(stage, "CMD").args)
    assert entrypoint == ["kafkaops"] and cmd == ["run"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == entrypoint + cmd


def test_runtime_writes_only_tmp(dockerfile, deployment) -> None:
    stage = final(dockerfile)
    env = " ".join(i.args for i in stage if i.keyword == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in env and "HOME=/tmp" in env
    assert only(stage, "WORKDIR").args == "/tmp"
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    (mount,) = container["volumeMounts"]
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert mount["mountPath"] == "/tmp" and "emptyDir" in volumes[mount["name"]]
    ports = {p["containerPort"] for p in container["ports"]}
    assert {int(p) for p in only(stage, "EXPOSE").args.split()} == ports


def test_final_stage_installs_only_the_wheel_with_at_most_the_fleet_extra(dockerfile) -> None:
    stage = final(dockerfile)
    assert only(stage, "ARG").args == 'EXTRAS=""'
    (run,) = [i for i in stage if i.keyword == "RUN"]
    assert "from=builder,source=/dist" in run.args  # the wheel built in the builder stage
    assert "source=docker/install.sh" in run.args and run.args.endswith('"$EXTRAS"')
    assert not [i for i in stage if i.keyword in {"COPY", "ADD"}]  # nothing else enters the image
    text = DOCKERFILE.read_text("utf-8")
    for forbidden in ("[test]", "[dev]", "gcc", "build-essential", "kafkaops/testing", "pip install -e"):
        assert forbidden not in text, forbidden
    script = (REPO / "docker" / "install.sh").read_text("utf-8")
    assert re.search(r'^\s*""\)\s+requirement="\$wheel" ;;', script, re.M)
    assert re.search(r'^\s*fleet\)\s+requirement="\$wheel\[fleet\]"', script, re.M)


def test_build_context_holds_what_the_dockerfile_uses(dockerfile) -> None:
    """Every COPY source and bind-mounted context file exists and .dockerignore lets it through."""
    ignore = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
              if line.strip() and not line.startswith("#")]

    def included(path: str) -> bool:
        verdict = True
        for pattern in ignore:
            negate = pattern.startswith("!")
            pattern = pattern.lstrip("!").rstrip("/")
            if fnmatch.fnmatch(path, pattern) or path.startswith(pattern + "/"):
                verdict = negate
        return verdict

    sources = []
    for stage in dockerfile[1]:
        for ins in stage:
            if ins.keyword == "COPY" and "--from" not in ins.args:
                sources += ins.args.split()[:-1]
            sources += [m for m in re.findall(r"--mount=type=bind,source=([^,\s]+)", ins.args)]
    assert sources
    for source in sources:
        assert (REPO / source).exists(), source
        assert included(source.rstrip("/")), source
    assert not included(".venv") and not included("tests")
    # a checkout's recorded class archive is for its own machine's JVM (and 185 MiB): never sent
    assert not included("operator/kafkaops/fleet/jvm/spark-classes.jsa")
    assert not included("operator/kafkaops/fleet/jvm/spark-classes.jsa.stamp")


def test_make_image_explains_a_missing_docker(tmp_path: Path) -> None:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "make"):  # a PATH without docker
        (bin_dir / tool).symlink_to(shutil.which(tool))
    run = subprocess.run([make, "-s", "image"], cwd=REPO, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PATH": str(bin_dir)})
    assert run.returncode != 0
    assert "make image: docker is not installed" in run.stderr


def test_make_image_explains_a_missing_daemon() -> None:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker client here: test_make_image_explains_a_missing_docker covers this machine")
    if subprocess.run([docker, "info"], capture_output=True, timeout=60).returncode == 0:
        pytest.skip("a Docker daemon is running: `make image` would build (not run in tests)")
    run = subprocess.run(["make", "-s", "image"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "make image: no Docker daemon is reachable" in run.stderr
