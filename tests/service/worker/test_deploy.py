"""Deployment files: docker-compose.yml, the Dockerfiles, the Kubernetes manifests, the operator docs.

Docker cannot run on the CI machine, so these are structural checks of the parsed files
against what the service needs: every setting they pass exists, every GPU worker has
its own GPU, migrations run before the API and workers start, health checks exist, and
the time limits agree (the worker's shutdown grace exceeds the job time limit).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
CLIENT_VARS = {"KERNELOPT_URL", "KERNELOPT_API_KEY"}


def setting_vars() -> set[str]:
    from kernelopt.service.settings import Settings

    return {f"KERNELOPT_{name.upper()}" for name in Settings.model_fields}


def _seconds(duration: str) -> float:
    units = {"h": 3600, "m": 60, "s": 1}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)([hms])", duration))


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_compose_services_and_dependencies(compose):
    services = compose["services"]
    workers = {n: s for n, s in services.items() if n.startswith("worker-gpu")}
    assert {"api", "migrate", "postgres", "redis"} <= set(services) and len(workers) >= 2

    # Migrations run once, after postgres is healthy; the API and workers wait for them.
    assert services["migrate"]["command"][-2:] == ["db", "upgrade"]
    assert services["migrate"]["restart"] == "no"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ["api", *workers]:
        deps = services[name]["depends_on"]
        assert deps["migrate"]["condition"] == "service_completed_successfully", name
        assert deps["redis"]["condition"] == "service_healthy", name

    for name in ["api", "postgres", "redis", *workers]:
        assert services[name]["healthcheck"]["test"], f"{name} has no health check"
    assert "8000" in services["api"]["ports"][0]
    assert services["api"]["build"]["dockerfile"] == "Dockerfile.api"
    assert services["migrate"]["build"]["dockerfile"] == "Dockerfile.api"


def test_compose_one_gpu_per_worker(compose):
    workers = {n: s for n, s in compose["services"].items() if n.startswith("worker-gpu")}
    seen: list[str] = []
    for name, svc in workers.items():
        assert svc["build"]["dockerfile"] == "Dockerfile.worker"
        assert svc["command"][:2] == ["kernelopt", "worker"]
        devices = svc["deploy"]["resources"]["reservations"]["devices"]
        assert len(devices) == 1 and devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]
        assert len(devices[0]["device_ids"]) == 1, f"{name} must reserve exactly one GPU"
        seen += devices[0]["device_ids"]
        assert name == f"worker-gpu{devices[0]['device_ids'][0]}"
    assert len(seen) == len(set(seen)), "two workers reserve the same GPU"


def test_compose_settings_volumes_and_grace(compose):
    services = compose["services"]
    known = setting_vars()
    env = services["api"]["environment"]
    assert set(env) <= known, f"unknown settings: {set(env) - known}"
    assert env["KERNELOPT_DATABASE_URL"].startswith("postgresql+psycopg://") and "@postgres:5432/" in env[
        "KERNELOPT_DATABASE_URL"]
    assert env["KERNELOPT_BROKER_URL"].startswith("redis://redis:6379")
    limit = float(re.search(r"(\d+)", str(env["KERNELOPT_JOB_TIME_LIMIT_S"])).group(1))
    named = set(compose["volumes"])
    assert {"postgres-data", "redis-data", "kernelopt-data"} <= named
    data_dir = env["KERNELOPT_DATA_DIR"]
    for name, svc in services.items():
        if name.startswith("worker-gpu") or name == "api":
            assert svc["environment"] == env  # one configuration for API and workers
            assert f"kernelopt-data:{data_dir}" in svc["volumes"], name  # blobs shared with the API
        if name.startswith("worker-gpu"):
            assert _seconds(svc["stop_grace_period"]) > limit  # warm shutdown lets a job finish
        for vol in svc.get("volumes", []):
            source = vol.split(":")[0]
            assert source in named, f"{name}: volume {source} is not a named volume"


def test_dockerfiles():
    api = (REPO / "Dockerfile.api").read_text()
    worker = (REPO / "Dockerfile.worker").read_text()
    assert re.search(r"^FROM python:3\.\d+-slim", api, re.M)
    assert "torch" not in api.split("RUN", 1)[1].lower().split("user")[0]  # no torch installed for the API
    assert re.search(r"^ARG PYTORCH_IMAGE=pytorch/pytorch:\S+cuda\S+", worker, re.M)
    assert re.search(r"^FROM \$\{PYTORCH_IMAGE\}", worker, re.M)
    assert re.search(r"^USER 10001", api, re.M)
    # The worker stays root in its container so that it can give each job a uid of its own and
    # build its sandbox (docs/operations.md, Threat model); the job's code never runs as root.
    assert not re.search(r"^USER ", worker, re.M) and "bubblewrap" in worker
    for text in (api, worker):
        assert 'pip install ".[service]"' in text
        # Every package the wheel needs is copied in.
        for pkg in ("api", "service", "storage", "worker", "cli", "isolation", "pipeline", "migrations"):
            assert re.search(rf"^COPY {pkg} \./{pkg}$", text, re.M), pkg
    assert '"kernelopt", "worker"' in worker and '"kernelopt", "serve"' in api


@pytest.fixture(scope="module")
def manifests() -> dict[tuple[str, str], dict]:
    docs = {}
    root = REPO / "deploy" / "kubernetes"
    kustomization = yaml.safe_load((root / "kustomization.yaml").read_text())
    for name in kustomization["resources"]:
        for doc in yaml.safe_load_all((root / name).read_text()):
            if doc:
                assert doc["apiVersion"] and doc["metadata"]["name"], name
                docs[(doc["kind"], doc["metadata"]["name"])] = doc
    return docs


def _container(doc: dict) -> dict:
    return doc["spec"]["template"]["spec"]["containers"][0]


def test_kubernetes_manifests(manifests):
    api = manifests[("Deployment", "kernelopt-api")]
    svc = manifests[("Service", "kernelopt-api")]
    worker = manifests[("Deployment", "kernelopt-worker")]
    migrate = manifests[("Job", "kernelopt-migrate")]
    config = manifests[("ConfigMap", "kernelopt-config")]
    secret = manifests[("Secret", "kernelopt-secrets")]
    pvc = manifests[("PersistentVolumeClaim", "kernelopt-data")]

    assert svc["spec"]["selector"] == api["spec"]["template"]["metadata"]["labels"]
    assert _container(api)["readinessProbe"]["httpGet"]["path"] == "/readyz"
    wc = _container(worker)
    assert wc["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert wc["command"][:2] == ["kernelopt", "worker"] and "livenessProbe" in wc
    assert worker["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 0
    assert _container(migrate)["command"][-2:] == ["db", "upgrade"]

    known = setting_vars()
    assert set(config["data"]) | set(secret["stringData"]) <= known
    assert {"KERNELOPT_DATABASE_URL", "KERNELOPT_BROKER_URL"} <= set(secret["stringData"])
    for doc in (api, worker, migrate):
        refs = {next(iter(r.values()))["name"] for r in _container(doc)["envFrom"]}
        assert refs == {"kernelopt-config", "kernelopt-secrets"}
    for doc in (api, worker):
        claims = [v["persistentVolumeClaim"]["claimName"] for v in doc["spec"]["template"]["spec"]["volumes"]
                  if "persistentVolumeClaim" in v]
        assert claims == ["kernelopt-data"]
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    limit = float(config["data"]["KERNELOPT_JOB_TIME_LIMIT_S"])
    assert worker["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > limit


def test_operations_doc_covers_every_setting():
    doc = (REPO / "docs" / "operations.md").read_text()
    missing = sorted(v for v in setting_vars() | CLIENT_VARS if f"`{v}`" not in doc)
    assert not missing, f"docs/operations.md does not document {missing}"
    for section in ("## Configuration", "### Scaling", "## Upgrading", "## Backups", "### The reaper",
                    "### Time limits"):
        assert section in doc
