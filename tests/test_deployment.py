"""docker-compose.yml and the Dockerfile agree with the code.

Docker itself is not run (the CI machines have no Docker engine): the compose file is parsed
with PyYAML and checked against what the code reads: its commands parse as real ``metro``
subcommands and options (the typer app itself parses them), every ``METRO_*`` variable is a
field of :class:`core.config.Settings` and the values load into it, the required settings
point at the compose services, artifacts and uploads are volumes shared by the API and the
workers, every long-running service has a health check, and the GPU worker reserves a GPU.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml

from cli.main import app as cli_app
from core.config import Settings

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"

APP_SERVICES = ("migrate", "api", "worker-gpu", "worker-cpu")
LONG_RUNNING = ("postgres", "redis", "api", "worker-gpu", "worker-cpu")
WORKERS = ("worker-gpu", "worker-cpu")
REQUIRED_SETTINGS = ("database_url", "broker_url", "artifacts_uri")

_INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}")


def interpolate(value: str) -> str:
    """Compose's ``${VAR:-default}`` with nothing set: the default (or empty)."""
    return _INTERPOLATION.sub(lambda m: m.group(2) or "", value)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text())


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    return compose["services"]


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: interpolate(str(v)) for k, v in env.items()}


def command(service: dict[str, Any]) -> list[str]:
    cmd = service["command"]
    return shlex.split(cmd) if isinstance(cmd, str) else [str(part) for part in cmd]


def volume_mounts(service: dict[str, Any]) -> dict[str, str]:
    """container path -> source (a named volume or a host path), short or long syntax."""
    mounts = {}
    for volume in service.get("volumes") or []:
        if isinstance(volume, str):
            source, target = interpolate(volume).split(":")[:2]
        else:
            source, target = volume["source"], volume["target"]
        mounts[target] = source
    return mounts


def metro_cli() -> Any:
    """The click group typer builds from ``cli.main.app`` (typer may vendor its own click,
    so this is duck-typed: ``commands`` and each command's ``make_context``)."""
    group = typer.main.get_command(cli_app)
    assert hasattr(group, "commands")
    return group


# -- compose: the services and their commands -------------------------------------------------


def test_compose_has_the_services(services: dict[str, Any]) -> None:
    assert set(services) >= {"postgres", "redis", *APP_SERVICES}
    for name in APP_SERVICES:
        build = services[name]["build"]
        assert (ROOT / build["context"] / build.get("dockerfile", "Dockerfile")).resolve() == (
            DOCKERFILE
        )
        assert "TORCH_VARIANT" in build["args"]
    # One image for every role.
    assert len({services[name]["image"] for name in APP_SERVICES}) == 1
    assert services["worker-cpu"]["profiles"] == ["cpu"]
    assert all("profiles" not in services[n] for n in ("postgres", "redis", "migrate", "api"))
    assert "profiles" not in services["worker-gpu"]


def test_commands_are_real_metro_subcommands_and_options(services: dict[str, Any]) -> None:
    """Each command is parsed by the ``metro`` CLI itself (typer/click): an unknown subcommand,
    option or value fails here as it would in the container."""
    group = metro_cli()
    expected = {
        "migrate": "migrate", "api": "serve", "worker-gpu": "worker", "worker-cpu": "worker",
    }  # fmt: skip
    parsed = {}
    for name, subcommand in expected.items():
        args = command(services[name])
        assert args[0] == subcommand, f"{name} runs `metro {args[0]}`"
        cmd = group.commands.get(args[0])
        assert cmd is not None, f"{name}: `metro {args[0]}` is not a command of the CLI"
        try:
            ctx = cmd.make_context(args[0], args[1:])
        except Exception as exc:  # click's UsageError & co.
            message = getattr(exc, "format_message", lambda e=exc: str(e))()
            pytest.fail(f"{name}: `metro {' '.join(args)}` does not parse: {message}")
        parsed[name] = ctx.params

    assert parsed["api"]["host"] == "0.0.0.0"
    assert parsed["api"]["migrate"] is False, "the API must not migrate: the migrate service does"
    assert parsed["api"]["worker"] is False, "the API container runs no embedded worker"
    assert set(parsed["worker-gpu"]["queues"].split(",")) >= {"gpu"}
    assert parsed["worker-cpu"]["queues"].split(",") == ["cpu"]
    # Every worker reconciles under an advisory lock: no service needs the old beat, so scaling
    # a worker service to zero (the CPU-only recipe above) cannot leave crashed jobs unrecovered.
    assert [n for n in WORKERS if parsed[n]["beat"]] == []

    # The published port and the health check reach the port the API listens on.
    port = parsed["api"]["port"]
    assert any(str(p).endswith(f":{port}") for p in services["api"]["ports"])
    assert f"127.0.0.1:{port}/" in " ".join(services["api"]["healthcheck"]["test"])


def test_migrate_runs_once_before_the_api_and_workers(services: dict[str, Any]) -> None:
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["migrate"].get("restart", "no") == "no"
    for name in ("api", *WORKERS):
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
        assert depends["postgres"]["condition"] == "service_healthy", name
        assert depends["redis"]["condition"] == "service_healthy", name


# -- compose: the environment against the settings ----------------------------------------------


def test_every_metro_variable_is_a_setting(services: dict[str, Any]) -> None:
    fields = set(Settings.model_fields)
    for name, service in services.items():
        for var in environment(service):
            if var.startswith("METRO_"):
                assert var.removeprefix("METRO_").lower() in fields, (
                    f"{name} sets {var}, which core.config.Settings does not read"
                )


def test_required_settings_point_at_the_compose_services(
    services: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    pg = environment(services["postgres"])
    for name in APP_SERVICES:
        env = environment(services[name])
        required = REQUIRED_SETTINGS if name != "migrate" else ("database_url",)
        for setting in required:
            assert f"METRO_{setting.upper()}" in env, f"{name} does not set METRO_{setting.upper()}"
        # The values load into the Settings the code reads (types, list parsing...).
        for var in list(os.environ):
            if var.startswith("METRO_"):
                monkeypatch.delenv(var)
        for var, value in env.items():
            monkeypatch.setenv(var, value)
        settings = Settings(_env_file=None)  # type: ignore[call-arg]

        db = urllib.parse.urlsplit(settings.database_url)
        assert db.scheme == "postgresql+psycopg" and db.hostname == "postgres", name
        assert (db.username, db.password, db.path.lstrip("/")) == (
            pg["POSTGRES_USER"], pg["POSTGRES_PASSWORD"], pg["POSTGRES_DB"],
        ), name  # fmt: skip
        if name == "migrate":
            continue
        broker = urllib.parse.urlsplit(settings.effective_broker_url)
        assert (broker.scheme, broker.hostname) == ("redis", "redis"), name
        assert settings.artifacts_uri.startswith("/"), "artifacts must go to an absolute path"


def test_artifacts_and_uploads_are_volumes_shared_by_api_and_workers(
    compose: dict[str, Any], services: dict[str, Any]
) -> None:
    named = set(compose.get("volumes") or {})
    for setting in ("METRO_ARTIFACTS_URI", "METRO_UPLOAD_DIR"):
        sources = set()
        for name in ("api", *WORKERS):
            path = environment(services[name])[setting]
            mounts = volume_mounts(services[name])
            assert path in mounts, f"{name}: {setting}={path} is not on a volume"
            sources.add(mounts[path])
        assert len(sources) == 1 and sources <= named, f"{setting} is not one named volume"
    # Same paths everywhere (a job names an uploaded file by its path).
    for setting in ("METRO_ARTIFACTS_URI", "METRO_UPLOAD_DIR", "METRO_DATABASE_URL"):
        assert len({environment(services[n])[setting] for n in ("api", *WORKERS)}) == 1
    assert volume_mounts(services["postgres"])["/var/lib/postgresql/data"] in named
    assert volume_mounts(services["redis"])["/data"] in named


def test_health_checks(services: dict[str, Any]) -> None:
    for name in LONG_RUNNING:
        check = services[name].get("healthcheck")
        assert check and check.get("test") and not check.get("disable"), f"{name}: no health check"
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert "ping" in services["redis"]["healthcheck"]["test"]
    assert "/readyz" in " ".join(services["api"]["healthcheck"]["test"])
    api_check = services["api"]["healthcheck"]["test"]
    compile(api_check[api_check.index("-c") + 1], "<api healthcheck>", "exec")


@pytest.fixture
def database_url() -> str:
    """The test machine's PostgreSQL (see tests/service/conftest.py), never migrated: only
    read."""
    dsn = os.environ.get("METRO_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")
    return dsn.replace("postgresql://", "postgresql+psycopg://", 1)


@pytest.fixture
def redis_url() -> str:
    return "redis://127.0.0.1:6379/15"


def test_worker_health_check_runs(
    services: dict[str, Any], database_url: str, redis_url: str, tmp_path: Path
) -> None:
    """The workers' check is Python run by the image's interpreter; run it here, on a migrated
    database and Redis, then on a database not migrated (a worker there took jobs it could only
    fail) and on one that is down."""
    from core.db.migrate import upgrade

    test = services["worker-gpu"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"]
    code = test[3]
    migrated = f"sqlite:///{tmp_path / 'metro.db'}"
    upgrade(migrated)
    env = {
        "PATH": "/usr/bin:/bin", "METRO_DATABASE_URL": migrated, "METRO_BROKER_URL": redis_url,
        "PYTHONPATH": str(ROOT),
    }  # fmt: skip
    ok = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, timeout=60)
    assert ok.returncode == 0, ok.stderr.decode()[-2000:]
    for database in (database_url, "postgresql+psycopg://nobody@127.0.0.1:1/none"):
        env["METRO_DATABASE_URL"] = database
        not_ok = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, timeout=60
        )
        assert not_ok.returncode == 1, (database, not_ok.stderr.decode()[-2000:])


def test_gpu_worker_reserves_a_gpu(services: dict[str, Any]) -> None:
    devices = services["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert any(d["driver"] == "nvidia" and "gpu" in d["capabilities"] for d in devices)
    assert "deploy" not in services["worker-cpu"], "the CPU worker must not need a GPU"


# -- the Dockerfile ---------------------------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def final_stage(instructions: list[tuple[str, str]]) -> list[tuple[str, str]]:
    last_from = max(i for i, (k, _) in enumerate(instructions) if k == "FROM")
    return instructions[last_from:]


def test_dockerfile_torch_build_argument() -> None:
    instructions = dockerfile_instructions()
    args = dict(
        rest.split("=", 1) if "=" in rest else (rest, "") for k, rest in instructions if k == "ARG"
    )
    assert args["TORCH_VARIANT"] == "cpu"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    deps = [d.replace(" ", "") for d in pyproject["project"]["dependencies"]]
    pins = [d for d in deps if d.startswith("torch==")]
    assert pins and args["TORCH_VERSION"] == pins[0].split("==")[1], "Docker torch != pyproject"
    installs = [rest for k, rest in instructions if k == "RUN" and "pip install" in rest]
    assert any(
        "download.pytorch.org/whl/${TORCH_VARIANT}" in r and "torch==${TORCH_VERSION}" in r
        for r in installs
    ), "the torch wheel index does not follow TORCH_VARIANT"


def test_every_volume_under_the_state_directory_exists_in_the_image(
    services: dict[str, Any],
) -> None:
    """Docker creates a missing mount point owned by root: the GPU worker's compile cache
    volume was not writable by the image's user, and its kernels went to /tmp without a word."""
    run = " ".join(rest for k, rest in final_stage(dockerfile_instructions()) if k == "RUN")
    made = set(re.findall(r"/var/lib/metro/[\w-]+", run.split("chown")[0]))
    mounted = {
        target for service in services.values() for target in volume_mounts(service)
        if target.startswith("/var/lib/metro/")
    }  # fmt: skip
    assert "/var/lib/metro/compile-cache" in mounted
    assert mounted <= made, mounted - made


def test_dockerfile_entrypoint_user_and_environment() -> None:
    instructions = dockerfile_instructions()
    final = final_stage(instructions)
    entrypoints = [rest for k, rest in final if k == "ENTRYPOINT"]
    assert entrypoints and yaml.safe_load(entrypoints[-1]) == ["metro"]
    # `metro` is the client package's script; the server's package adds its commands to it
    # through the metro.cli entry point, and declares no `metro` script of its own to clash.
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "metro" not in pyproject["project"].get("scripts", {})
    assert pyproject["project"]["entry-points"]["metro.cli"] == {"server": "cli.main:register"}
    setup = (ROOT / "clients" / "python" / "setup.py").read_text()
    assert '"console_scripts": ["metro = metro_cli.app:main"]' in setup
    cmd = yaml.safe_load([rest for k, rest in final if k == "CMD"][-1])
    assert cmd[0] in metro_cli().commands
    users = [rest for k, rest in final if k == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0"), "the image must not run as root"
    # ENV lines: every METRO_* variable is a setting.
    fields = set(Settings.model_fields)
    for k, rest in final:
        if k == "ENV":
            for var in re.findall(r"\b(METRO_[A-Z0-9_]+)=", rest):
                assert var.removeprefix("METRO_").lower() in fields, var


def _dockerignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern that matches the path, or any directory above it,
    decides; a pattern starting with ! keeps what it matches."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for pattern in patterns:
        keep = pattern.startswith("!")
        glob = pattern.removeprefix("!").strip("/")
        if any(fnmatch.fnmatchcase(p, glob) or fnmatch.fnmatchcase(p, glob.removeprefix("**/"))
               for p in prefixes):  # fmt: skip
            excluded = not keep
    return excluded


def test_dockerfile_copies_what_exists_and_dockerignore_keeps_it() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for keyword, rest in dockerfile_instructions():
        if keyword == "COPY" and "--from=" not in rest:
            *sources, _dest = rest.split()
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: no such path"
                # Every file it copies, not the path alone: "clients" dropped clients/python,
                # which the exact-name check passed, and the image did not build.
                root = ROOT / source
                files = [root] if root.is_file() else [f for f in root.rglob("*") if f.is_file()]
                for file in files:
                    rel = file.relative_to(ROOT).as_posix()
                    if "__pycache__" in rel or ".egg-info" in rel:
                        continue
                    assert not _dockerignored(rel, patterns), (
                        f"COPY {source}, but .dockerignore drops {rel}"
                    )
    assert _dockerignored("clients/generate.py", patterns)  # the rest of clients/ stays out
    assert _dockerignored("tests/test_readme.py", patterns)


def test_the_image_installs_the_client_the_cli_commands_use() -> None:
    # The `metro` command (the entry point) and its submit/watch/result/... are the client
    # package's: without it the container has no `metro`.
    assert "metro_client" in (ROOT / "clients" / "python" / "metro_cli" / "api.py").read_text()
    installs = [
        rest for keyword, rest in dockerfile_instructions()
        if keyword == "RUN" and "pip install" in rest
    ]  # fmt: skip
    assert any("./clients/python" in rest for rest in installs), installs


# -- the README's set-up and tour ---------------------------------------------------------------


def _make_run_command(*variables: str) -> list[str]:
    """The ``metro`` command ``make run`` would run (make's dry run, with the venv stamp taken
    as made so that only the run recipe prints)."""
    make = shutil.which("make")
    assert make is not None, "make is not installed; the README's set-up needs it"
    done = subprocess.run(
        [make, "-n", "-o", ".venv/.installed", "run", *variables],
        cwd=ROOT, capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if "metro serve" in line]
    assert len(lines) == 1, done.stdout
    args = shlex.split(lines[0])
    return args[args.index("serve") :]


@pytest.mark.parametrize(
    ("variables", "host", "port"),
    [((), "127.0.0.1", 8000), (("PORT=8123",), "127.0.0.1", 8123),
     (("HOST=0.0.0.0", "PORT=9001"), "0.0.0.0", 9001)],
)  # fmt: skip
def test_make_run_takes_the_port_and_host(variables: tuple[str, ...], host: str, port: int) -> None:
    args = _make_run_command(*variables)
    params = metro_cli().commands["serve"].make_context("serve", args[1:]).params
    assert (params["host"], params["port"]) == (host, port)


def _tour_commands() -> list[str]:
    """The shell lines of the README's bash blocks, continuation lines joined, comments cut."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        lines += [re.split(r"\s#", line, maxsplit=1)[0].strip() for line in joined.splitlines()]
    return [line for line in lines if line]


def test_the_readme_tour_writes_no_file_into_the_repository() -> None:
    """Every file the tour downloads or writes goes into its scratch folder ($OUT, a mktemp -d),
    not the working tree, where it would show up as untracked files."""
    commands = _tour_commands()
    assert "OUT=$(mktemp -d)" in commands
    targets = [t for line in commands for t in re.findall(r"(?:^|\s)(?:-o|--output)\s+(\S+)", line)]
    assert len(targets) >= 3, targets  # the ONNX download, the scores file, curl's weights
    assert all(t.startswith("$OUT") for t in targets), f"the tour writes into the tree: {targets}"
    for line in commands:
        if line.startswith("metro download"):
            assert re.search(r"\s(-o|--output)\s", line), f"writes model-<id>.* here: {line}"
        # (the lookahead takes the spaces too: "> /dev/null" is not a file in the tree)
        assert not re.search(r"(?<![0-9&])>(?!\s*(?:\$OUT|/dev/))", line.replace("->", "")), line


def test_pyproject_builds_without_deprecation_warnings() -> None:
    """setuptools reads pyproject.toml without a warning (a `project.license` table printed its
    deprecation three times in every install)."""
    import warnings

    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist = apply_configuration(Distribution(), ROOT / "pyproject.toml")
    assert [str(w.message).splitlines()[0] for w in caught] == []
    assert dist.metadata.license_expression == "Apache-2.0"


def test_the_serve_banner_masks_the_database_password() -> None:
    """It printed the database URL as configured, password and all, into container logs."""
    from cli.main import shown_url

    shown = shown_url("postgresql+psycopg://metro:S3cret@db:5432/metro")
    assert "S3cret" not in shown and shown == "postgresql+psycopg://metro:***@db:5432/metro"
    assert shown_url("sqlite:///var/metro.db") == "sqlite:///var/metro.db"
    assert shown_url("not a url") == "<a URL SQLAlchemy cannot read>"


def test_metro_demo_asks_f_beta_for_its_beta_and_names_the_metric_as_people_do() -> None:
    """`metro demo --metric f_beta` trained F1 (the library's f_beta() without a beta) under a
    table titled "f_beta"."""
    run = [sys.executable, "-m", "cli.main", "demo", "--metric", "f_beta"]
    refused = subprocess.run(run, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert refused.returncode == 1
    assert "f_beta needs --beta" in " ".join(refused.stderr.split())
    done = subprocess.run(
        [*run, "--beta", "2", "--repeats", "1", "--dataset", "builtin://synthetic?n_samples=300"],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "F2 on" in done.stdout and "f_beta" not in done.stdout and "metro" in done.stdout


def test_a_server_command_names_a_bad_or_misspelt_variable_in_one_line(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("METRO_")}
    env.update(METRO_API_THREADS="0", METRO_DATABSE_URL="postgresql://typo")
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "migrate"], capture_output=True, text=True,
        timeout=120, cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        "warning: METRO_DATABSE_URL is not a setting of the service; ignored",
        "error: METRO_API_THREADS: Input should be greater than or equal to 1",
    ], done.stderr


def test_compose_keeps_tenants_data_apart_and_workers_compiled_kernels(
    services: dict[str, Any],
) -> None:
    """METRO_DATA_ROOTS without {tenant} let every tenant read all of ./data; the GPU worker's
    compile cache was not on a volume (the docs say to keep it); the API had Docker's default
    10 s to stop, its own shutdown timeout."""
    from core.config import Settings

    for name in APP_SERVICES:
        env = environment(services[name])
        assert all("{tenant}" in root for root in env["METRO_DATA_ROOTS"].split(",")), name
    gpu = services["worker-gpu"]
    cache = environment(gpu)["METRO_COMPILE_CACHE_DIR"]
    assert cache in volume_mounts(gpu) and not volume_mounts(gpu)[cache].startswith("/")
    grace = str(services["api"]["stop_grace_period"])
    assert grace.endswith("s") and int(grace[:-1]) > Settings().shutdown_timeout_seconds
