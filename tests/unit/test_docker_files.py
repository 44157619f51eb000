"""docker/Dockerfile and docker/docker-compose.yml, checked without a Docker engine (make compose-test
builds and runs them).

Static checks: the compose file parses and has the broker, pipeline and tests services; every build
context, Dockerfile, target stage, COPY source and repository script they name exists; every command
they run parses with the real CLI parsers (minikafka, python -m minikafka.pipeline, pytest paths and
markers); the images run as a non-root user and the broker's HEALTHCHECK calls
minikafka.healthcheck. The healthcheck module itself runs against a live broker (integration).
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
DOCKERFILE = DOCKER / "Dockerfile"
COMPOSE = DOCKER / "docker-compose.yml"


# -- Dockerfile parsing (enough for our own file: instructions, continuations, stages) ----------


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, with line continuations joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        word, _, rest = full.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def stages(path: Path) -> dict[str, list[tuple[str, str]]]:
    """Stage name -> its instructions (FROM included)."""
    result: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for ins, args in instructions(path):
        if ins == "FROM":
            m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?", args, re.IGNORECASE)
            assert m, args
            current = result.setdefault(m.group(2) or f"stage{len(result)}", [])
        if current is not None:
            current.append((ins, args))
    return result


def effective_user(stage_name: str, all_stages: dict[str, list[tuple[str, str]]]) -> str:
    """The USER a stage runs as, following FROM <earlier stage> chains (root if never set)."""
    user = "root"
    for ins, args in all_stages[stage_name]:
        if ins == "FROM":
            parent = args.split()[0]
            if parent in all_stages:
                user = effective_user(parent, all_stages)
        elif ins == "USER":
            user = args.split(":")[0]
    return user


def exec_form(args: str) -> list[str]:
    """A JSON exec-form ["a", "b"] or a shell-form string, as argv."""
    import json

    return json.loads(args) if args.startswith("[") else shlex.split(args)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml", reason="pyyaml (test extra) parses docker-compose.yml")
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def docker_stages() -> dict[str, list[tuple[str, str]]]:
    return stages(DOCKERFILE)


# -- the Dockerfile -----------------------------------------------------------------------------


@pytest.mark.unit
def test_dockerfile_broker_stage_is_the_default_and_non_root(docker_stages: dict[str, Any]) -> None:
    names = list(docker_stages)
    assert names[-1] == "broker", "the broker must be the last stage (the default build target)"
    # The base image is a build argument (make docker passes a debootstrap image; the default needs
    # a registry) and nothing else needs one: no `# syntax` line (BuildKit would fetch its frontend).
    assert ("ARG", "BASE_IMAGE=python:3.11-slim") in instructions(DOCKERFILE)
    assert docker_stages["install"][0] == ("FROM", "${BASE_IMAGE} AS install")
    assert docker_stages["broker"][0] == ("FROM", "${BASE_IMAGE} AS broker")
    assert not re.search(r"^#\s*syntax", DOCKERFILE.read_text(), re.MULTILINE | re.IGNORECASE)
    froms = [args.split()[0] for ins, args in instructions(DOCKERFILE) if ins == "FROM"]
    assert all(f.startswith("${") or f in docker_stages for f in froms), froms
    assert effective_user("install", docker_stages) == "root"  # installs only; no image runs from it
    for stage in ("broker", "pipeline", "tests"):
        user = effective_user(stage, docker_stages)
        assert user not in ("root", "0"), f"stage {stage} runs as {user}"
    broker = dict((ins, args) for ins, args in docker_stages["broker"])  # last of each kind
    assert "9092" in broker["EXPOSE"].split()


@pytest.mark.unit
def test_dockerfile_healthcheck_calls_the_healthcheck_module(docker_stages: dict[str, Any]) -> None:
    checks = [args for ins, args in docker_stages["broker"] if ins == "HEALTHCHECK"]
    assert len(checks) == 1
    cmd = checks[0].split(" CMD ", 1)[1].strip()
    argv = exec_form(cmd)
    assert argv[:3] == ["python", "-m", "minikafka.healthcheck"]
    assert importlib.util.find_spec("minikafka.healthcheck") is not None


@pytest.mark.unit
def test_dockerfile_copies_and_scripts_exist(docker_stages: dict[str, Any]) -> None:
    for stage, body in docker_stages.items():
        for ins, args in body:
            if ins == "COPY" and "--from=" not in args:
                *sources, _dest = [a for a in exec_form(args) if not a.startswith("--")]
                for src in sources:
                    assert (REPO / src).exists(), f"{stage}: COPY source {src} missing"
            if ins == "RUN":
                for script in re.findall(r"\b(?:spark|docker|bench)/[\w./-]+\.sh\b", args):
                    assert (REPO / script).is_file(), f"{stage}: RUN uses {script}, missing"
    entry = [args for ins, args in docker_stages["broker"] if ins == "ENTRYPOINT"][-1]
    cmd = [args for ins, args in docker_stages["broker"] if ins == "CMD"][-1]
    assert exec_form(entry) == ["minikafka"]
    _assert_minikafka_command(exec_form(cmd))


@pytest.mark.unit
def test_root_dockerignore_keeps_the_context_small() -> None:
    """The legacy builder reads only the context root's .dockerignore: .venv, data and .cache must
    stay out (a 763 MB context otherwise) and everything the Dockerfile copies must stay in."""
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert patterns[0] == "*"
    allowed = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    assert not allowed & {".venv", "data", ".cache", "build"}
    for stage, body in stages(DOCKERFILE).items():
        for ins, args in body:
            if ins == "COPY" and "--from=" not in args:
                *sources, _dest = [a for a in exec_form(args) if not a.startswith("--")]
                for src in sources:
                    assert src.rstrip("/") in allowed, f"{stage}: COPY {src} is excluded by .dockerignore"


# -- the compose file ---------------------------------------------------------------------------


def _assert_minikafka_command(argv: list[str]) -> None:
    from minikafka.__main__ import _parser

    args = _parser().parse_args(argv)
    assert args.command == "serve"


def _assert_python_command(argv: list[str]) -> None:
    assert argv[0] == "python" and argv[1] == "-m", argv
    module = argv[2]
    if module == "minikafka.pipeline":
        from minikafka.pipeline.cli import parser

        parser().parse_args(argv[3:])
    elif module == "pytest":
        markers = {m.split(":")[0].strip() for m in
                   tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]}
        rest = argv[3:]
        for i, a in enumerate(rest):
            if a == "-m":
                for word in re.findall(r"[A-Za-z_]+", rest[i + 1]):
                    assert word in markers | {"and", "or", "not"}, f"unknown marker {word}"
            elif not a.startswith("-") and (i == 0 or rest[i - 1] != "-m"):
                assert (REPO / a).exists(), f"pytest path {a} missing"
    else:
        assert importlib.util.find_spec(module) is not None, f"module {module} not found"


@pytest.mark.unit
def test_compose_services_and_their_builds(compose: dict[str, Any], docker_stages: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"broker", "pipeline", "tests"} <= set(services)
    for name, svc in services.items():
        build = svc["build"]
        context = (COMPOSE.parent / build["context"]).resolve()
        assert context == REPO, f"{name}: build context {context}"
        assert (context / build["dockerfile"]).resolve() == DOCKERFILE
        assert build["target"] in docker_stages, f"{name}: no stage {build['target']}"
    assert services["broker"]["build"]["target"] == "broker"
    assert services["broker"]["ports"] == ["127.0.0.1:${MINIKAFKA_PORT:-9092}:9092"]  # loopback only
    assert "name" not in compose, "docker-compose 1.29 rejects a top-level name (pass -p instead)"
    for name in ("pipeline", "tests"):
        assert services[name]["depends_on"]["broker"]["condition"] == "service_healthy"
    assert services["tests"]["environment"]["KAFKA_BOOTSTRAP"] == "broker:9092"


@pytest.mark.unit
def test_compose_commands_parse(compose: dict[str, Any], docker_stages: dict[str, Any]) -> None:
    services = compose["services"]
    broker_cmd = services["broker"]["command"]
    _assert_minikafka_command(broker_cmd)
    assert "advertised.listeners=PLAINTEXT://broker:9092" in broker_cmd
    health = services["broker"]["healthcheck"]["test"]
    assert health[0] == "CMD"
    _assert_python_command(health[1:])
    assert health[1:4] == ["python", "-m", "minikafka.healthcheck"]
    pipeline_cmd = services["pipeline"]["command"]
    _assert_python_command(pipeline_cmd)
    assert pipeline_cmd[pipeline_cmd.index("--bootstrap-servers") + 1] == "broker:9092"
    _assert_python_command(services["tests"]["command"])
    for _ins, args in (x for x in docker_stages["pipeline"] if x[0] == "CMD"):
        _assert_python_command(exec_form(args))


# -- the healthcheck module against a live broker -----------------------------------------------


@pytest.mark.integration
def test_healthcheck_against_a_live_broker(kafka_broker: Any) -> None:
    ok = subprocess.run([sys.executable, "-m", "minikafka.healthcheck", kafka_broker.bootstrap],
                        capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0, ok.stderr
    assert "healthy" in ok.stdout


@pytest.mark.integration
def test_healthcheck_fails_without_a_broker() -> None:
    from minikafka.testing import free_port

    bad = subprocess.run([sys.executable, "-m", "minikafka.healthcheck", f"127.0.0.1:{free_port()}"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 1
