"""Static checks of the deployment files: they parse, and everything they name exists.

- deploy/dagster.yaml is valid Dagster instance config, class by class (without connecting).
- Its queue limits keep slots for the catalog schedule under any flood of per-run work
  (simulated with Dagster's own tag-limit counter), here and in the Helm values.
- docker-compose.yml, .env.example, workspace.yaml and the Dockerfiles agree with each
  other, with the package (modules, env variables it reads) and with pyproject.toml (pins).
- deploy/helm/values.yaml uses keys the official chart knows and gives the code everything
  it reads.
"""

from __future__ import annotations

import ast
import importlib
import re
import shlex
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DOCKER = DEPLOY / "docker"
PACKAGE = ROOT / "bench_pipeline"

PG_VARS = {"DAGSTER_PG_HOST", "DAGSTER_PG_PORT", "DAGSTER_PG_USER", "DAGSTER_PG_PASSWORD", "DAGSTER_PG_DB"}
# Read by bench_pipeline/resources/settings.py; BENCH_HOME is only the parent of their defaults.
BENCH_SETTINGS = {"BENCH_RUNS_ROOT", "BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE", "BENCH_QUIET_SECONDS"}
LANGFUSE_KEYS = {"LANGFUSE_BASE_URL", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"}
# Names the package reads that a deployment may leave unset (defaults apply).
PENDING_IN_PACKAGE: set[str] = set()
# Allowed in the user-code image beyond pyproject.toml: the Kubernetes/object-storage deployment.
K8S_EXTRAS = {"dagster-k8s", "dagster-aws", "fsspec", "s3fs", "gcsfs", "aiobotocore", "boto3"}


def load_yaml(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def instance_env_vars(node) -> set[str]:
    """Every {env: NAME} in a Dagster config tree."""
    if isinstance(node, dict):
        if set(node) == {"env"}:
            return {node["env"]}
        return set().union(*(instance_env_vars(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(instance_env_vars(v) for v in node)) if node else set()
    return set()


def package_env_vars() -> set[str]:
    """BENCH_* and LANGFUSE_* names written as string constants anywhere in the package."""
    names = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and re.fullmatch(r"(BENCH|LANGFUSE)_[A-Z0-9_]+", node.value)):
                names.add(node.value)
    return names


def settings_env_vars() -> set[str]:
    source = (PACKAGE / "resources" / "settings.py").read_text(encoding="utf-8")
    return set(re.findall(r'os\.environ\.get\("([A-Z0-9_]+)"', source))


def module_exists(module: str) -> bool:
    parts = module.split(".")
    return (ROOT.joinpath(*parts).with_suffix(".py")).is_file() or (ROOT.joinpath(*parts) / "__init__.py").is_file()


def module_arg(args: list[str]) -> str:
    return args[args.index("-m") + 1]


def pyproject_requirements() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    return {canonicalize_name(r.name): r for r in reqs}


# --- deploy/dagster.yaml ----------------------------------------------------------------


@pytest.fixture
def instance_env(monkeypatch, tmp_path):
    values = {"DAGSTER_PG_HOST": "db", "DAGSTER_PG_PORT": "5432", "DAGSTER_PG_USER": "u",
              "DAGSTER_PG_PASSWORD": "p", "DAGSTER_PG_DB": "d", "DAGSTER_COMPUTE_LOGS_DIR": str(tmp_path / "logs")}
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    return values


def test_instance_config_is_valid_and_uses_postgres_from_the_environment(instance_env, tmp_path):
    from dagster._config import process_config
    from dagster._core.instance.config import dagster_instance_config

    (tmp_path / "dagster.yaml").write_text((DEPLOY / "dagster.yaml").read_text())
    config, custom_class = dagster_instance_config(str(tmp_path))
    assert custom_class is None
    assert instance_env_vars(load_yaml(DEPLOY / "dagster.yaml")) == PG_VARS | {"DAGSTER_COMPUTE_LOGS_DIR"}

    # Every pluggable class exists and accepts its config (env variables resolved as Dagster does).
    for section in ("run_storage", "event_log_storage", "schedule_storage", "scheduler", "run_coordinator",
                    "run_launcher", "compute_logs"):
        entry = config[section]
        cls = getattr(importlib.import_module(entry["module"].replace("dagster.core", "dagster._core")), entry["class"])
        result = process_config(cls.config_type(), entry.get("config") or {})
        assert result.success, (section, result.errors)
        if section.endswith("storage") and section != "compute_logs":
            assert entry["module"].startswith("dagster_postgres."), section
            assert result.value["postgres_db"] == {
                "hostname": "db", "port": 5432, "username": "u", "password": "p", "db_name": "d",
                "params": {}, "scheme": "postgresql"}
    assert config["run_coordinator"]["class"] == "QueuedRunCoordinator"
    assert config["run_retries"]["enabled"] and config["run_retries"]["max_retries"] >= 1
    assert config["run_monitoring"]["enabled"]


def _limits_by_tag(limits: list[dict]) -> dict[tuple, int]:
    return {(item["key"], item.get("value")): item["limit"] for item in limits}


def _queue_configs() -> dict[str, tuple[int, list[dict]]]:
    local = load_yaml(DEPLOY / "dagster.yaml")["run_coordinator"]["config"]
    helm = load_yaml(DEPLOY / "helm" / "values.yaml")["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"]
    return {
        "dagster.yaml": (local["max_concurrent_runs"], local["tag_concurrency_limits"]),
        "helm": (helm["maxConcurrentRuns"], helm["tagConcurrencyLimits"]),
    }


def test_queue_limits_name_the_tags_the_package_sets():
    from bench_pipeline.definitions import defs

    per_run = defs.resolve_job_def("process_run").tags["bench/kind"]
    cross_run = defs.resolve_job_def("refresh_catalog").tags["bench/kind"]
    assert (per_run, cross_run) == ("per_run", "cross_run")
    assert '"bench/trigger"' in (PACKAGE / "sensors" / "run_folder_sensor.py").read_text()
    for name, (max_runs, limits) in _queue_configs().items():
        by_tag = _limits_by_tag(limits)
        assert set(by_tag) == {("bench/kind", "cross_run"), ("bench/kind", "per_run"), ("bench/trigger", None),
                               ("dagster/backfill", None)}, name
        assert by_tag[("bench/kind", "cross_run")] == 1, name
        assert by_tag[("bench/kind", "per_run")] <= max_runs - 2, name
        assert by_tag[("bench/trigger", None)] < by_tag[("bench/kind", "per_run")], name
        assert by_tag[("dagster/backfill", None)] < by_tag[("bench/kind", "per_run")], name


def _dequeue(max_runs: int, limits: list[dict], queue: list, running: list) -> list:
    """One pass of the daemon's dequeue (QueuedRunCoordinatorDaemon): FIFO, skipping blocked runs."""
    from dagster._utils.tags import TagConcurrencyLimitsCounter

    counter = TagConcurrencyLimitsCounter(limits, running)
    launched = []
    for run in queue:
        if len(running) + len(launched) >= max_runs:
            break
        if counter.is_blocked(run):
            continue
        counter.update_counters_with_launched_item(run)
        launched.append(run)
    return launched


def _daemon_settings() -> dict[str, dict]:
    """The queue's timing, the sensor daemon's threads and the tick retention, as Dagster reads
    them (snake case), from deploy/dagster.yaml and from the Helm values."""
    local = load_yaml(DEPLOY / "dagster.yaml")
    values = helm()
    queue = values["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"]
    sensors = values["dagsterDaemon"]["sensors"]
    retention = values["retention"]
    assert retention["enabled"] is True
    by_type = retention["sensor"]["purgeAfterDays"]
    # The chart's schema wants all four kinds when given by kind; -1 (kept) is Dagster's default
    # for started ticks, which deploy/dagster.yaml leaves unset.
    assert set(by_type) == {"skipped", "success", "failure", "started"} and by_type["started"] == -1
    return {
        "dagster.yaml": {
            "queue": {k: local["run_coordinator"]["config"][k]
                      for k in ("dequeue_interval_seconds", "dequeue_use_threads", "dequeue_num_workers")},
            "sensors": local["sensors"],
            "retention": {"schedule": local["retention"]["schedule"]["purge_after_days"],
                          "sensor": local["retention"]["sensor"]["purge_after_days"]},
        },
        "helm": {
            "queue": {"dequeue_interval_seconds": queue["dequeueIntervalSeconds"],
                      "dequeue_use_threads": queue["dequeueUseThreads"],
                      "dequeue_num_workers": queue["dequeueNumWorkers"]},
            "sensors": {"use_threads": sensors["useThreads"], "num_workers": sensors["numWorkers"],
                        "num_submit_workers": sensors["numSubmitWorkers"]},
            "retention": {"schedule": retention["schedule"]["purgeAfterDays"],
                          "sensor": {k: v for k, v in by_type.items() if k != "started"}},
        },
    }


def test_the_queue_timing_sensor_threads_and_tick_retention_are_the_same_in_both_deployments():
    settings = _daemon_settings()
    assert settings["dagster.yaml"] == settings["helm"]
    queue = settings["dagster.yaml"]["queue"]
    assert queue["dequeue_interval_seconds"] == 1 and queue["dequeue_use_threads"] is True
    assert settings["dagster.yaml"]["sensors"]["use_threads"] is True
    # The run-folder sensor ticks every 5 s: its skipped ticks are not kept for long.
    assert settings["dagster.yaml"]["retention"]["sensor"]["skipped"] <= 1


@pytest.mark.parametrize("deployment", ["dagster.yaml", "helm"])
def test_a_flood_of_runs_cannot_starve_the_catalog_schedule_or_a_backfill(deployment):
    max_runs, limits = _queue_configs()[deployment]
    sensor = [SimpleNamespace(name=f"new-{i}", tags={"bench/kind": "per_run", "bench/trigger": "new"}) for i in range(500)]
    backfill = [SimpleNamespace(name=f"bf-{i}", tags={"bench/kind": "per_run", "dagster/backfill": "b1"}) for i in range(500)]
    catalog = SimpleNamespace(name="catalog", tags={"bench/kind": "cross_run", "dagster/schedule_name": "daily_catalog_refresh"})
    # The sensor floods the queue first, then a backfill, then the schedule fires.
    launched = _dequeue(max_runs, limits, [*sensor, *backfill, catalog], running=[])
    assert catalog in launched
    assert any(r in launched for r in backfill), "a backfill must progress during a sensor flood"
    # Every slot taken by per-run work: still a slot for the catalog when it comes.
    running = [r for r in launched if r is not catalog]
    assert _dequeue(max_runs, limits, [*sensor[len(running):], catalog], running=running) == [catalog]
    second = _dequeue(max_runs, limits, [SimpleNamespace(name="catalog-2", tags=dict(catalog.tags))], running=launched)
    assert second == [], "at most one catalog run at a time"


# --- docker compose ---------------------------------------------------------------------


def compose():
    return load_yaml(DOCKER / "docker-compose.yml")


def compose_vars(text: str) -> dict[str, str | None]:
    """${NAME}, ${NAME:-default}, ${NAME:?error} -> {NAME: operator or None}."""
    return {m.group(1): m.group(2) for m in re.finditer(r"\$\{([A-Z0-9_]+)(:-|:\?|-|\?)?[^}]*\}", text)}


def env_example() -> dict[str, str]:
    pairs = {}
    for line in (DOCKER / ".env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value.strip()
    return pairs


def test_compose_services_builds_and_commands_exist():
    spec = compose()
    assert set(spec["services"]) == {"postgres", "code", "webserver", "daemon"}
    for name, service in spec["services"].items():
        if "build" in service:
            context = (DOCKER / service["build"]["context"]).resolve()
            assert context == ROOT, name
            assert (context / service["build"]["dockerfile"]).is_file(), name
    code = spec["services"]["code"]
    assert module_exists(module_arg(code["command"]))
    assert code["command"] == dockerfile_cmd(DOCKER / "user_code.Dockerfile")
    assert spec["services"]["code"]["healthcheck"]["test"][-1] == code["command"][code["command"].index("-p") + 1]


def test_compose_data_mounts_match_the_settings_the_code_reads():
    code = compose()["services"]["code"]
    env = code["environment"]
    assert BENCH_SETTINGS <= settings_env_vars() | {"BENCH_QUIET_SECONDS"}
    assert BENCH_SETTINGS <= set(env)
    mounts = {}
    for volume in code["volumes"]:
        _, target, mode = volume.rsplit(":", 2)
        mounts[target] = mode
    assert mounts[env["BENCH_RUNS_ROOT"]] == "ro"
    assert mounts[env["BENCH_OUTPUT_ROOT"]] == "rw"
    assert mounts[env["BENCH_STORAGE_BASE"]] == "rw"
    assert mounts[env["DAGSTER_COMPUTE_LOGS_DIR"]] == "rw"
    # The webserver shows the compute logs the code server writes: the same volume.
    web_mounts = {v.rsplit(":", 2)[1]: v.split(":")[0] for v in compose()["services"]["webserver"]["volumes"]}
    code_mounts = {v.rsplit(":", 2)[1]: v.split(":")[0] for v in code["volumes"]}
    logs = env["DAGSTER_COMPUTE_LOGS_DIR"]
    assert web_mounts[logs] == code_mounts[logs]


def test_compose_gives_every_dagster_process_the_instance_variables():
    needed = instance_env_vars(load_yaml(DEPLOY / "dagster.yaml"))
    for name in ("code", "webserver", "daemon"):
        assert needed <= set(compose()["services"][name]["environment"]), name
    pg = compose()["services"]["postgres"]["environment"]
    code = compose()["services"]["code"]["environment"]
    assert pg["POSTGRES_USER"] == code["DAGSTER_PG_USER"]
    assert pg["POSTGRES_PASSWORD"] == code["DAGSTER_PG_PASSWORD"]
    assert pg["POSTGRES_DB"] == code["DAGSTER_PG_DB"]
    assert code["DAGSTER_PG_HOST"] == "postgres"


def test_env_example_defines_exactly_the_variables_compose_uses():
    used = compose_vars((DOCKER / "docker-compose.yml").read_text())
    example = env_example()
    required = {name for name, op in used.items() if op in (None, ":?", "?")}
    assert required <= set(example), required - set(example)
    assert set(example) <= set(used), set(example) - set(used)
    assert LANGFUSE_KEYS <= set(example)


def test_deployment_variables_are_ones_the_package_reads():
    read = package_env_vars()
    assert settings_env_vars() - {"BENCH_HOME"} == BENCH_SETTINGS
    assert LANGFUSE_KEYS <= read
    code_env = compose()["services"]["code"]["environment"]
    helm_env = helm_user_deployment()["env"]
    for where, names in (("compose", set(code_env)), ("helm", set(helm_env))):
        ours = {n for n in names if n.startswith(("BENCH_", "LANGFUSE_"))}
        assert ours - read - PENDING_IN_PACKAGE == set(), (where, ours - read)
        assert BENCH_SETTINGS <= ours, where


def test_workspace_points_at_the_code_server():
    (entry,) = load_yaml(DOCKER / "workspace.yaml")["load_from"]
    grpc = entry["grpc_server"]
    code = compose()["services"]["code"]
    command = code["command"]
    assert grpc["host"] == "code"
    assert str(grpc["port"]) == command[command.index("-p") + 1]
    assert grpc["location_name"] == command[command.index("--location-name") + 1]
    for name in ("webserver", "daemon"):
        args = compose()["services"][name]["command"]
        workspace = args[args.index("-w") + 1]
        assert workspace in dockerfile_copies(DOCKER / "dagster.Dockerfile").values()
        assert dockerfile_copies(DOCKER / "dagster.Dockerfile")["deploy/docker/workspace.yaml"] == workspace


# --- Dockerfiles ------------------------------------------------------------------------


def dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", path.read_text(encoding="utf-8"))
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, rest = line.partition(" ")
            out.append((op.upper(), rest.strip()))
    return out


def dockerfile_cmd(path: Path) -> list[str]:
    import json

    (cmd,) = [rest for op, rest in dockerfile_instructions(path) if op == "CMD"]
    return json.loads(cmd)


def dockerfile_copies(path: Path) -> dict[str, str]:
    """{source: destination} of every COPY (destination files resolved when it is a folder)."""
    copies = {}
    for op, rest in dockerfile_instructions(path):
        if op == "COPY":
            *sources, dest = shlex.split(rest)
            for source in sources:
                copies[source] = dest + Path(source).name if dest.endswith("/") else dest
    return copies


def dockerfile_requirements(path: Path) -> dict[str, Requirement]:
    reqs = {}
    for op, rest in dockerfile_instructions(path):
        if op == "RUN" and "pip install" in rest:
            for command in rest.split("&&"):
                words = shlex.split(command)
                if words[:2] == ["pip", "install"]:
                    for word in words[2:]:
                        if not word.startswith("-") and word != ".":
                            req = Requirement(word)
                            assert canonicalize_name(req.name) not in reqs, f"{req.name} installed twice in {path.name}"
                            reqs[canonicalize_name(req.name)] = req
    return reqs


def test_user_code_image_installs_the_k8s_extra_as_pinned_in_pyproject():
    """`pip install '.[k8s]'` and the image install the same Kubernetes/S3 packages."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extra = {canonicalize_name(r.name): r for r in map(Requirement, project["optional-dependencies"]["k8s"])}
    image = dockerfile_requirements(DOCKER / "user_code.Dockerfile")
    assert set(extra) == K8S_EXTRAS
    for name, req in extra.items():
        assert image[name].specifier == req.specifier, (name, str(image[name].specifier), str(req.specifier))


def test_the_tests_install_the_object_storage_clients_the_k8s_extra_pins():
    """The test extra's s3fs/gcsfs family and aiobotocore/boto3 pair are the k8s extra's, pin for
    pin: the object-storage tests run the clients a deployment installs."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    k8s, test = ({canonicalize_name(r.name): r for r in map(Requirement, extras[name])} for name in ("k8s", "test"))
    shared = {"fsspec", "s3fs", "gcsfs", "aiobotocore", "boto3"}
    assert shared <= set(k8s) and shared <= set(test)
    assert {name: str(test[name].specifier) for name in shared} == {name: str(k8s[name].specifier) for name in shared}


def test_user_code_image_installs_the_pyproject_pins():
    project = pyproject_requirements()
    image = dockerfile_requirements(DOCKER / "user_code.Dockerfile")
    assert set(project) <= set(image), set(project) - set(image)
    for name, req in project.items():
        assert image[name].specifier == req.specifier, (name, str(image[name].specifier), str(req.specifier))
    extras = set(image) - set(project)
    assert extras == K8S_EXTRAS, extras
    dagster_version = Version(str(project["dagster"].specifier).removeprefix("=="))
    for name in extras:
        (spec,) = image[name].specifier
        assert spec.operator == "==", name  # pinned exactly, like the rest of the Dagster family
        if name.startswith("dagster-"):
            # Integrations are 0.(major+16).minor of dagster 1.major.minor: 1.13.27 <-> 0.29.27
            assert Version(spec.version).release == (0, dagster_version.minor + 16, dagster_version.micro), name


def test_dagster_image_installs_the_same_dagster_as_the_code():
    project = pyproject_requirements()
    image = dockerfile_requirements(DOCKER / "dagster.Dockerfile")
    assert {"dagster", "dagster-webserver", "dagster-postgres", "sqlalchemy", "psycopg2-binary"} == set(image)
    for name, req in image.items():
        assert req.specifier == project[name].specifier, name


@pytest.mark.parametrize("dockerfile", ["user_code.Dockerfile", "dagster.Dockerfile"])
def test_dockerfiles_copy_existing_files_and_fit_python_and_the_dockerignore(dockerfile):
    path = DOCKER / dockerfile
    (base,) = [rest for op, rest in dockerfile_instructions(path) if op == "FROM"]
    python = Version(re.match(r"python:(\d+\.\d+)", base).group(1))
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    from packaging.specifiers import SpecifierSet

    assert python in SpecifierSet(requires), (base, requires)
    ignore = (DOCKER / f"{dockerfile}.dockerignore").read_text().splitlines()
    allowed = {line[1:] for line in ignore if line.startswith("!")}
    assert "*" in ignore
    copies = dockerfile_copies(path)
    for source in copies:
        assert (ROOT / source).exists(), source
        assert source in allowed, f"{source} is excluded from the build context by {dockerfile}.dockerignore"
    assert copies["deploy/dagster.yaml"] == "/opt/dagster/dagster_home/dagster.yaml"
    env = " ".join(rest for op, rest in dockerfile_instructions(path) if op == "ENV")
    assert "DAGSTER_HOME=/opt/dagster/dagster_home" in env
    if dockerfile == "user_code.Dockerfile":
        assert module_exists(module_arg(dockerfile_cmd(path)))


# --- Helm values ------------------------------------------------------------------------

# Keys the official chart (helm/dagster/schema, 1.13) accepts at the places these values set.
CHART_KEYS = {
    (): {"global", "generatePostgresqlPasswordSecret", "postgresql", "dagsterWebserver", "dagster-user-deployments",
         "runLauncher", "computeLogManager", "dagsterDaemon", "telemetry", "pythonLogs", "retention", "serviceAccount",
         "ingress", "imagePullSecrets", "scheduler", "migrate", "busybox", "rabbitmq", "redis", "flower",
         "generateCeleryConfigSecret", "additionalInstanceConfig"},
    ("global",): {"postgresqlSecretName", "dagsterHome", "serviceAccountName", "celeryConfigSecretName"},
    ("postgresql",): {"image", "enabled", "postgresqlHost", "postgresqlUsername", "postgresqlPassword",
                      "postgresqlDatabase", "postgresqlParams", "postgresqlScheme", "service", "pool"},
    ("dagster-user-deployments",): {"enabled", "enableSubchart", "imagePullSecrets", "deployments"},
    ("dagster-user-deployments", "deployments", 0): {
        "name", "image", "dagsterApiGrpcArgs", "codeServerArgs", "includeConfigInLaunchedRuns", "deploymentNamespace",
        "port", "env", "envConfigMaps", "envSecrets", "annotations", "nodeSelector", "affinity", "tolerations",
        "podSecurityContext", "securityContext", "resources", "livenessProbe", "readinessProbe", "startupProbe",
        "labels", "volumeMounts", "volumes", "schedulerName", "initContainers", "sidecarContainers", "deploymentStrategy"},
    ("runLauncher", "config", "k8sRunLauncher"): {
        "image", "imagePullPolicy", "jobNamespace", "loadInclusterConfig", "kubeconfigFile", "envConfigMaps",
        "envSecrets", "envVars", "volumeMounts", "volumes", "labels", "failPodOnRunFailure", "resources",
        "schedulerName", "securityContext", "runK8sConfig"},
    ("runLauncher", "config", "k8sRunLauncher", "runK8sConfig"): {
        "containerConfig", "podSpecConfig", "podTemplateSpecMetadata", "jobSpecConfig", "jobMetadata"},
    ("computeLogManager", "config", "s3ComputeLogManager"): {
        "bucket", "localDir", "prefix", "useSsl", "verify", "verifyCertPath", "endpointUrl", "skipEmptyFiles",
        "uploadInterval", "uploadExtraArgs", "showUrlOnly", "region"},
    ("dagsterDaemon",): {
        "enabled", "image", "runCoordinator", "heartbeatTolerance", "env", "envConfigMaps", "envSecrets",
        "deploymentLabels", "labels", "nodeSelector", "affinity", "tolerations", "podSecurityContext",
        "securityContext", "resources", "checkDbReadyInitContainer", "livenessProbe", "readinessProbe",
        "startupProbe", "annotations", "runMonitoring", "runRetries", "sensors", "schedules", "backfills",
        "schedulerName", "logFormat", "volumeMounts", "volumes", "initContainerResources", "extraContainers",
        "extraPrependedInitContainers"},
    ("dagsterDaemon", "runCoordinator", "config", "queuedRunCoordinator"): {
        "maxConcurrentRuns", "tagConcurrencyLimits", "dequeueIntervalSeconds", "dequeueNumWorkers",
        "dequeueUseThreads", "blockOpConcurrencyLimitedRuns"},
    ("dagsterDaemon", "runRetries"): {"enabled", "maxRetries", "retryOnAssetOrOpFailure"},
    ("dagsterDaemon", "sensors"): {"useThreads", "numWorkers", "numSubmitWorkers"},
    ("retention",): {"enabled", "sensor", "schedule", "autoMaterialize"},
    ("retention", "sensor"): {"purgeAfterDays"},
    ("retention", "schedule"): {"purgeAfterDays"},
    ("dagsterDaemon", "runMonitoring"): {
        "enabled", "startTimeoutSeconds", "cancelTimeoutSeconds", "maxResumeRunAttempts", "pollIntervalSeconds",
        "freeSlotsAfterRunEndSeconds", "maxRuntimeSeconds"},
}


def helm():
    return load_yaml(DEPLOY / "helm" / "values.yaml")


def helm_user_deployment() -> dict:
    (deployment,) = helm()["dagster-user-deployments"]["deployments"]
    return deployment


def test_helm_values_use_keys_the_chart_knows():
    values = helm()
    for path, known in CHART_KEYS.items():
        node = values
        for part in path:  # a key, or an index into a list
            node = node[part]
        assert set(node) <= known, (path, set(node) - known)


def test_helm_runs_the_code_server_with_k8s_launcher_and_external_postgres():
    values = helm()
    deployment = helm_user_deployment()
    assert module_exists(module_arg(deployment["codeServerArgs"]))
    assert deployment["includeConfigInLaunchedRuns"]["enabled"] is True
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    pg = values["postgresql"]
    assert pg["enabled"] is False and pg["postgresqlHost"] and pg["postgresqlUsername"] and pg["postgresqlDatabase"]
    assert values["global"]["postgresqlSecretName"] and values["generatePostgresqlPasswordSecret"] is False
    daemon = values["dagsterDaemon"]
    assert daemon["runCoordinator"]["type"] == "QueuedRunCoordinator"
    assert daemon["runRetries"]["enabled"] and daemon["runRetries"]["maxRetries"] >= 1
    # The chart's images run the same Dagster as the code image.
    dagster_version = str(pyproject_requirements()["dagster"].specifier).removeprefix("==")
    assert values["dagsterWebserver"]["image"]["tag"] == daemon["image"]["tag"] == dagster_version


def test_helm_puts_runs_reports_frames_and_locks_in_one_bucket():
    """The Kubernetes default: every root in one bucket (no shared volume), each pod's local
    cache on its own scratch volume, the pins and the publication lock in the bucket too."""
    deployment = helm_user_deployment()
    env = deployment["env"]
    assert BENCH_SETTINGS <= set(env)
    bucket = env["BENCH_STORAGE_BASE"].removeprefix("s3://").split("/")[0]
    for name in ("BENCH_RUNS_ROOT", "BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE", "BENCH_BASELINES", "BENCH_LOCK_DIR"):
        assert env[name].startswith(f"s3://{bucket}/"), name
    assert len({env[n] for n in ("BENCH_RUNS_ROOT", "BENCH_OUTPUT_ROOT", "BENCH_STORAGE_BASE")}) == 3
    volumes = {v["name"]: v for v in deployment["volumes"]}
    assert all("persistentVolumeClaim" not in v for v in volumes.values())  # nothing shared
    (scratch,) = [m for m in deployment["volumeMounts"] if env["BENCH_CACHE"].startswith(m["mountPath"] + "/")]
    assert "emptyDir" in volumes[scratch["name"]]
    secrets = {s["name"] for s in deployment["envSecrets"]}
    assert {"bench-object-storage", "bench-langfuse"} <= secrets
    assert helm()["computeLogManager"]["config"]["s3ComputeLogManager"]["bucket"] == bucket


def test_helm_shared_volumes_overlay_changes_only_where_runs_and_reports_live():
    """values-shared-volumes.yaml, the alternative: the same user deployment with the run
    folders read-only and the reports read-write on shared volumes, the lock files there."""
    (overlay,) = load_yaml(DEPLOY / "helm" / "values-shared-volumes.yaml")["dagster-user-deployments"]["deployments"]
    default = helm_user_deployment()
    storage_keys = {"env", "volumes", "volumeMounts"}
    assert {k: v for k, v in overlay.items() if k not in storage_keys} == \
        {k: v for k, v in default.items() if k not in storage_keys}
    env = overlay["env"]
    assert BENCH_SETTINGS <= set(env)
    assert {k: v for k, v in env.items() if not k.startswith(("BENCH_RUNS", "BENCH_OUTPUT", "BENCH_BASELINES",
                                                                "BENCH_LOCK", "BENCH_CACHE"))} == \
        {k: v for k, v in default["env"].items() if not k.startswith(("BENCH_RUNS", "BENCH_OUTPUT", "BENCH_BASELINES",
                                                                       "BENCH_LOCK", "BENCH_CACHE"))}
    assert env["BENCH_STORAGE_BASE"].startswith("s3://")
    mounts = {m["mountPath"]: m for m in overlay["volumeMounts"]}
    volumes = {v["name"]: v for v in overlay["volumes"]}
    runs = mounts[env["BENCH_RUNS_ROOT"]]
    assert runs.get("readOnly") is True and volumes[runs["name"]]["persistentVolumeClaim"]["readOnly"] is True
    reports = mounts[env["BENCH_OUTPUT_ROOT"]]
    assert not reports.get("readOnly") and "persistentVolumeClaim" in volumes[reports["name"]]
    assert env["BENCH_LOCK_DIR"].startswith(env["BENCH_OUTPUT_ROOT"] + "/")
    names = {n for n in env if n.startswith(("BENCH_", "LANGFUSE_"))}
    assert names - package_env_vars() - PENDING_IN_PACKAGE == set()


def test_the_package_selects_the_k8s_executor_the_helm_values_ask_for():
    assert helm_user_deployment()["env"]["BENCH_EXECUTOR"] == "k8s"
    assert "BENCH_EXECUTOR" in package_env_vars()
