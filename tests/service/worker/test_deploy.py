"""Deployment files: docker-compose.yml, the Dockerfiles, the Kubernetes manifests, the operator docs.

Docker cannot run on the CI machine, so these are structural checks of the parsed files
against what the service needs: every setting they pass exists, every GPU worker has
its own GPU, migrations run before the API and workers start, health checks exist, and
the time limits agree (the worker's shutdown grace exceeds the job time limit).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
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
    assert '"kernelopt", "worker"' in worker and '"kernelopt", "serve"' in api


def test_the_worker_image_defaults_to_a_supported_torch_and_has_every_engine_package():
    from kernelopt.pipeline.torch_support import torch_version_problem

    worker = (REPO / "Dockerfile.worker").read_text()
    tag = re.search(r"^ARG PYTORCH_IMAGE=pytorch/pytorch:(\d+\.\d+\.\d+)-cuda", worker, re.M)
    assert tag, "the default base names no torch release"
    assert torch_version_problem(tag.group(1)) is None, torch_version_problem(tag.group(1))


# --------------------------------------------------------------------------- the images' wheels

def _copies(dockerfile: str) -> list[tuple[str, str]]:
    """(source, destination) of each COPY line (no --from stages: the images are single-stage)."""
    found = []
    for line in dockerfile.splitlines():
        if line.startswith("COPY "):
            *sources, dest = line.split()[1:]
            found += [(src, dest if not dest.endswith("/") else dest + Path(src).name) for src in sources]
    return found


def _build_context(dockerfile: str, into: Path) -> None:
    """The image's /app: exactly the files its COPY lines take from the checkout (.dockerignore's caches left out)."""
    for src, dest in _copies(dockerfile):
        target = into / dest.removeprefix("./")
        if (REPO / src).is_dir():
            shutil.copytree(REPO / src, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / src, target)


def _subpackages(root: Path) -> set[str]:
    """The packages of the `kernelopt` directory under `root`, dotted."""
    return {".".join(init.parent.relative_to(root).parts) for init in (root / "kernelopt").rglob("__init__.py")
            if "__pycache__" not in init.parts}


_IMPORT_ALL = """
import importlib, pkgutil, sys
import kernelopt
assert kernelopt.__file__.startswith(sys.argv[1]), kernelopt.__file__
names = sorted(m.name for m in pkgutil.walk_packages(kernelopt.__path__, "kernelopt.") if m.name != "kernelopt.migrations.env")
for name in names:
    importlib.import_module(name)
print(len(names), "modules")
"""


def _wheel_problems(dockerfile: str, tmp: Path) -> str | None:
    """Build the wheel from the files the Dockerfile copies, install it alone, import every module from it;
    None when all of that works and it holds every subpackage of the checkout's kernelopt/, else what failed."""
    context, site = tmp / "app", tmp / "site"
    context.mkdir()
    _build_context(dockerfile, context)
    built = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
                            str(context)], capture_output=True, text=True, timeout=600)
    if built.returncode != 0:
        return "pip install failed: " + built.stderr[-1500:]
    missing = _subpackages(REPO) - _subpackages(site)
    if missing:
        return f"the wheel lacks {sorted(missing)}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(site)}
    run = subprocess.run([sys.executable, "-c", _IMPORT_ALL, str(site)], cwd=tmp, env=env, capture_output=True,
                         text=True, timeout=300)
    return None if run.returncode == 0 else "importing failed: " + run.stderr[-1500:]


@pytest.mark.parametrize("dockerfile", ["Dockerfile.api", "Dockerfile.worker"])
def test_the_image_wheel_holds_and_imports_every_subpackage(dockerfile, tmp_path):
    assert _wheel_problems((REPO / dockerfile).read_text(), tmp_path) is None


def test_a_dockerfile_that_misses_a_package_folder_fails_the_wheel_check(tmp_path):
    """The check above is not vacuous: the API image copying every subpackage but one, one COPY each, fails it."""
    text = (REPO / "Dockerfile.api").read_text()
    assert "COPY kernelopt ./kernelopt\n" in text
    folders = sorted(p.name for p in (REPO / "kernelopt").iterdir() if p.is_dir() and p.name != "__pycache__")
    assert "core" in folders
    per_folder = "".join(f"COPY kernelopt/{f} ./kernelopt/{f}\n" for f in folders if f != "core")
    broken = text.replace("COPY kernelopt ./kernelopt\n", "COPY kernelopt/__init__.py ./kernelopt/\n" + per_folder)
    problem = _wheel_problems(broken, tmp_path)
    assert problem is not None and "kernelopt.core" in problem, problem


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
