"""Checks the deployment files without a Docker engine or a cluster.

    python scripts/lint_deploy.py [REPO_ROOT]

- deploy/k8s/*.yaml: every object validated against the Kubernetes OpenAPI schema
  (kubernetes-validate, strict: unknown fields are errors), then cross-checked: probes on /readyz
  and /healthz, 3 replicas, every referenced ConfigMap/Secret key defined in the example manifests,
  PDB/HPA/Service selecting the Deployment, one image for the Deployment and the migrations Job.
- docker/compose.yaml: the five services wired with health conditions, ports on 127.0.0.1 only,
  every ${VAR} given a default or listed in docker/.env.example.
- docker/*.yaml beside it (override files, `-f compose.yaml -f fcm.yaml`): only compose.yaml's
  services, ports on 127.0.0.1 only, the same ${VAR} rule; in every Compose file, each secret a
  service mounts is defined from a file, and each /run/secrets/ path a setting names is mounted.
- docker/Dockerfile: non-root user, HEALTHCHECK on /healthz, the three executables, the run-time
  packages read from docker/runtime-packages.txt.
- deploy/systemd: the unit's required settings.
- Every configuration key set anywhere is one linkstr-push documents (docs/configuration.md).

Prints each problem and exits 1 when there is any.
"""

import configparser
import pathlib
import re
import sys

import kubernetes_validate
import yaml

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1])
problems: list[str] = []


def problem(where: str, text: str) -> None:
    problems.append(f"{where}: {text}")


def documented_keys() -> set[str]:
    keys: set[str] = set()
    for line in (ROOT / "docs/configuration.md").read_text().splitlines():
        if line.startswith("| `"):
            first_cell = line.split("|")[1]
            keys.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", first_cell))
    return keys


KNOWN = documented_keys() | {"POSTGRES_PASSWORD"}  # the compose file's own variable


def check_keys(where: str, keys) -> None:
    for key in keys:
        if key not in KNOWN:
            problem(where, f"{key} is not a documented setting")


# ---- Kubernetes ----
objects: dict[tuple[str, str], dict] = {}
for path in sorted((ROOT / "deploy/k8s").glob("*.yaml")):
    for document in yaml.safe_load_all(path.read_text()):
        if not document:
            continue
        kind, name = document.get("kind"), document.get("metadata", {}).get("name")
        if kind == "Kustomization":
            for resource in document.get("resources", []):
                if not (path.parent / resource).exists():
                    problem(path.name, f"lists {resource}, which does not exist")
            continue
        try:
            kubernetes_validate.validate(document, kubernetes_validate.latest_version(), strict=True)
        except kubernetes_validate.ValidationError as error:
            location = ".".join(str(part) for part in error.path)
            problem(path.name, f"{kind}/{name}: {location}: {error.message}")
        except kubernetes_validate.SchemaNotFoundError as error:
            problem(path.name, f"{kind}/{name}: no schema ({error})")
        objects[(kind, name)] = document

deployment = objects.get(("Deployment", "linkstr-push"))
if not deployment:
    problem("deploy/k8s", "no Deployment linkstr-push")
else:
    spec = deployment["spec"]
    if spec.get("replicas") != 3:
        problem("deployment.yaml", "replicas must be 3")
    labels = spec["template"]["metadata"]["labels"]
    container = spec["template"]["spec"]["containers"][0]
    if container.get("readinessProbe", {}).get("httpGet", {}).get("path") != "/readyz":
        problem("deployment.yaml", "readiness probe must be GET /readyz")
    if container.get("livenessProbe", {}).get("httpGet", {}).get("path") != "/healthz":
        problem("deployment.yaml", "liveness probe must be GET /healthz")
    if not container.get("resources", {}).get("requests"):
        problem("deployment.yaml", "resource requests are required")
    for source in container.get("envFrom", []):
        name = source.get("configMapRef", {}).get("name")
        if name and ("ConfigMap", name) not in objects:
            problem("deployment.yaml", f"envFrom ConfigMap {name} is not defined")
    workloads = [("deployment.yaml", container)]
    job = objects.get(("Job", "linkstr-push-migrate"))
    if job:
        job_container = job["spec"]["template"]["spec"]["containers"][0]
        workloads.append(("migrate-job.yaml", job_container))
        if job_container.get("image") != container.get("image"):
            problem("migrate-job.yaml", "the Job must run the Deployment's image")
        if job_container.get("args") != ["migrate"]:
            problem("migrate-job.yaml", "the Job runs `linkstr-push migrate`")
    else:
        problem("deploy/k8s", "no migrations Job")
    for where, workload in workloads:
        check_keys(where, [item["name"] for item in workload.get("env", [])])
        for item in workload.get("env", []):
            reference = item.get("valueFrom", {}).get("secretKeyRef")
            if reference:
                secret = objects.get(("Secret", reference["name"]))
                if not secret:
                    problem(where, f"Secret {reference['name']} is not defined (secret.example.yaml)")
                elif reference["key"] not in secret.get("stringData", {}) and reference["key"] not in secret.get("data", {}):
                    problem(where, f"Secret {reference['name']} has no key {reference['key']}")
    for volume in spec["template"]["spec"].get("volumes", []):
        name = volume.get("secret", {}).get("secretName")
        if name and ("Secret", name) not in objects:
            problem("deployment.yaml", f"volume Secret {name} is not defined")
    for kind in ("Service", "PodDisruptionBudget"):
        target = objects.get((kind, "linkstr-push"))
        if not target:
            problem("deploy/k8s", f"no {kind} linkstr-push")
            continue
        selector = target["spec"]["selector"]
        selector = selector.get("matchLabels", selector)
        if any(labels.get(key) != value for key, value in selector.items()):
            problem(kind, "its selector does not match the Deployment's pods")
    hpa = objects.get(("HorizontalPodAutoscaler", "linkstr-push"))
    if not hpa or hpa["spec"]["scaleTargetRef"].get("name") != "linkstr-push":
        problem("hpa.yaml", "must scale the Deployment linkstr-push")
    elif hpa["spec"].get("minReplicas", 1) < 3:
        problem("hpa.yaml", "minReplicas below the Deployment's 3")
configmap = objects.get(("ConfigMap", "linkstr-push"))
if configmap:
    check_keys("configmap.yaml", configmap.get("data", {}).keys())

# ---- Compose ----
compose_path = ROOT / "docker/compose.yaml"
compose = yaml.safe_load(compose_path.read_text())
services = compose.get("services", {})
expected = {"postgres", "migrate", "apns-sandbox", "relay", "gateway"}
if set(services) != expected:
    problem("compose.yaml", f"services are {sorted(services)}, expected {sorted(expected)}")
for name, service in services.items():
    for port in service.get("ports", []):
        if not str(port).startswith("127.0.0.1:"):
            problem("compose.yaml", f"{name} publishes {port} beyond loopback")
gateway = services.get("gateway", {})
if gateway.get("depends_on", {}).get("migrate", {}).get("condition") != "service_completed_successfully":
    problem("compose.yaml", "the gateway must wait for the migrations to complete")
if gateway.get("depends_on", {}).get("apns-sandbox", {}).get("condition") != "service_healthy":
    problem("compose.yaml", "the gateway must wait for a healthy sandbox")
if services.get("migrate", {}).get("depends_on", {}).get("postgres", {}).get("condition") != "service_healthy":
    problem("compose.yaml", "migrations must wait for a healthy PostgreSQL")
if "healthcheck" not in gateway:
    problem("compose.yaml", "the gateway needs a healthcheck")


def environment(service: dict) -> dict:
    """A service's `environment`, in either of Compose's forms (a mapping, or KEY=value lines)."""
    value = service.get("environment") or {}
    if isinstance(value, list):
        return dict(item.split("=", 1) if "=" in item else (item, None) for item in value)
    return value


def check_secrets(where: str, document: dict, defined: dict) -> None:
    """Secrets are files (the only kind Compose mounts without a swarm), and a setting that names
    /run/secrets/X needs its service to mount X."""
    for name, secret in (document.get("secrets") or {}).items():
        if not isinstance(secret, dict) or "file" not in secret:
            problem(where, f"secret {name} must be defined from a file")
    for name, service in (document.get("services") or {}).items():
        mounted = set()
        for item in service.get("secrets", []):
            source = item if isinstance(item, str) else item.get("source")
            target = source if isinstance(item, str) else item.get("target", source)
            if source not in defined:
                problem(where, f"{name} mounts secret {source}, which is not defined")
            mounted.add(target)
        for key, value in environment(service).items():
            if isinstance(value, str) and value.startswith("/run/secrets/"):
                if value.removeprefix("/run/secrets/") not in mounted:
                    problem(where, f"{name}: {key} names {value}, a secret it does not mount")


check_keys("compose.yaml gateway", environment(gateway).keys())
env_example = ROOT / "docker/.env.example"
example_keys = set()
if env_example.exists():
    example_keys = {line.split("=", 1)[0] for line in env_example.read_text().splitlines() if "=" in line and not line.startswith("#")}
    check_keys(".env.example", example_keys)
else:
    problem("docker", "no .env.example")


def check_variables(path: pathlib.Path) -> None:
    for variable, default in re.findall(r"\$\{([A-Z0-9_]+)(:-[^}]*)?\}", path.read_text()):
        if not default and variable not in example_keys:
            problem(path.name, f"${{{variable}}} has no default and is not in .env.example")


check_variables(compose_path)
overrides = {path: yaml.safe_load(path.read_text()) or {} for path in sorted((ROOT / "docker").glob("*.yaml")) if path != compose_path}
check_secrets("compose.yaml", compose, compose.get("secrets") or {})
for path, document in overrides.items():
    check_variables(path)
    # An override is used with compose.yaml alone: its secrets are compose.yaml's and its own.
    check_secrets(path.name, document, {**(compose.get("secrets") or {}), **(document.get("secrets") or {})})
    for name, service in (document.get("services") or {}).items():
        if name not in services:
            problem(path.name, f"overrides {name}, which compose.yaml does not define")
        for port in service.get("ports", []):
            if not str(port).startswith("127.0.0.1:"):
                problem(path.name, f"{name} publishes {port} beyond loopback")
        if name in ("gateway", "migrate"):  # the services that run linkstr-push
            check_keys(f"{path.name} {name}", environment(service).keys())

# ---- Dockerfile ----
dockerfile = (ROOT / "docker/Dockerfile").read_text()
stages = re.findall(r"^FROM\s+(\S+)", dockerfile, re.MULTILINE)
if len(stages) < 2 or not stages[0].startswith("swift:6.3"):
    problem("Dockerfile", "needs a Swift 6.3 build stage and a separate run-time stage")
if not re.search(r"^USER\s+(?!root\b|0\b)\S+", dockerfile, re.MULTILINE):
    problem("Dockerfile", "must run as a non-root USER")
if not re.search(r"^HEALTHCHECK .*\n?.*?/healthz", dockerfile, re.MULTILINE):
    problem("Dockerfile", "needs a HEALTHCHECK on /healthz")
for executable in ("linkstr-push", "apns-sandbox", "linkstr"):
    if f".build/release/{executable}" not in dockerfile:
        problem("Dockerfile", f"does not ship {executable}")
if "docker/runtime-packages.txt" not in dockerfile:
    problem("Dockerfile", "must install the run-time packages from docker/runtime-packages.txt")

# ---- systemd ----
unit = configparser.ConfigParser(strict=False, interpolation=None)
unit.optionxform = str
unit.read(ROOT / "deploy/systemd/linkstr-push.service")
for section, key in (("Unit", "Description"), ("Service", "ExecStart"), ("Service", "User"), ("Service", "EnvironmentFile"), ("Install", "WantedBy")):
    if not unit.has_option(section, key):
        problem("linkstr-push.service", f"[{section}] {key} is missing")
if unit.has_option("Service", "User") and unit.get("Service", "User") == "root":
    problem("linkstr-push.service", "must not run as root")
systemd_env = ROOT / "deploy/systemd/linkstr-push.env.example"
if systemd_env.exists():
    check_keys("linkstr-push.env.example",
               [line.split("=", 1)[0] for line in systemd_env.read_text().splitlines() if "=" in line and not line.startswith("#")])

for line in problems:
    print(line)
print(f"{len(problems)} problem(s)" if problems else "deployment files OK")
sys.exit(1 if problems else 0)
