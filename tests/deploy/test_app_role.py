"""Role app deploys from the app's manifest: its manifest tasks and its templates run here against
a stand-in app host (no lab), and what they write for the three built-in apps is what the role
wrote before manifests (the same environment file, unit command line, Prometheus target). Bad
input (an unknown app, a wrong manifest, a variant the app does not have, a variable manifests
replaced) is one message from `make deploy` or the role, before anything runs on a host.

Run standalone: .venv/bin/pytest -q tests/deploy/test_app_role.py
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
# Every manifest make deploy knows (apps/*/perflab-app.yml, apps/peers/*.yml), as its messages list them.
KNOWN = ("petclinic, quarkus, spring-mvc, spring-webflux, tfb-quarkus, tfb-quarkus-postgresql, tfb-spring, "
         "tfb-spring-postgresql, tfb-spring-webflux, tfb-spring-webflux-postgresql")
INVENTORY = """\
all:
  children:
    lab:
      children:
        app: {hosts: {appx: {lab_address: app.example, ansible_connection: local, ansible_python_interpreter: '{{ ansible_playbook_python }}'}}}
        db: {hosts: {dbx: {lab_address: db.example, lab_db_engine: mariadb}}}
"""
# The environment file role app wrote for every app before manifests (its app.env.j2 over
# vars/main.yml __app_env with the defaults), after its ansible_managed comment lines.
ENV_BEFORE = """\
PERFLAB_HTTP_PORT="8080"
PERFLAB_DB_HOST="db.example"
PERFLAB_DB_PORT="3306"
PERFLAB_DB_NAME="perflab"
PERFLAB_DB_USER="perflab"
PERFLAB_DB_CA_FILE="/etc/perflab/db-ca.crt"
PERFLAB_DB_POOL_SIZE="16"
{engine}
PERFLAB_GREETING_DISPATCH="{dispatch}"
PERFLAB_THREADS="{threads}"
PERFLAB_MAX_THREADS="200"
{observability}
PERFLAB_DB_PASSWORD="s3cret"
"""
# What each app never read of it (test_manifest checks that its sources do not name them).
NOT_READ = {"quarkus": ("PERFLAB_THREADS", "PERFLAB_MAX_THREADS"), "spring-mvc": ("PERFLAB_GREETING_DISPATCH",),
            "spring-webflux": ("PERFLAB_GREETING_DISPATCH", "PERFLAB_THREADS", "PERFLAB_MAX_THREADS")}


def render(tmp_path: Path, **extra: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], Path]:
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(INVENTORY)
    (tmp_path / "secret").write_text("s3cret\n")
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    argv = [str(REPO / ".venv/bin/ansible-playbook"), "-i", str(inventory), str(REPO / "tests/deploy/app_check.yml"),
            "-e", f"app_out={out}", "-e", f"app_db_password_file={tmp_path / 'secret'}", "-e", f"app_db_ca_file={tmp_path / 'secret'}"]
    for name, value in extra.items():
        argv += ["-e", json.dumps({name: value})]
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    record = json.loads((out / "app.json").read_text()) if (out / "app.json").exists() else {}
    return proc, record, out


def without_comments(path: Path) -> str:
    return "".join(line for line in path.read_text().splitlines(keepends=True) if not line.startswith("#"))


def exec_start(out: Path) -> str:
    return next(line for line in (out / "perflab-app.service").read_text().splitlines() if line.startswith("ExecStart="))


@pytest.mark.parametrize(("app", "variants", "profile", "dispatch", "threads"), [
    ("quarkus", "", "default", "io", "platform"),
    ("quarkus", "dispatch=worker", "io-vs-worker", "worker", "platform"),
    ("spring-mvc", "threads=virtual", "virtual-threads-db", "io", "virtual"),
    ("spring-webflux", "", "default", "io", "platform"),
])
def test_the_builtin_apps_deploy_as_before_manifests(tmp_path: Path, app: str, variants: str, profile: str,
                                                     dispatch: str, threads: str) -> None:
    proc, record, out = render(tmp_path, app_name=app, app_variants=variants, app_profile=profile)
    assert proc.returncode == 0, proc.stdout[-3000:]
    # The one setting added since: the db host's engine (the Spring apps' driver, Quarkus' runtime profile).
    engine = 'QUARKUS_PROFILE="mariadb"' if app == "quarkus" else 'PERFLAB_DB_ENGINE="mariadb"'
    # And the lab's instrumentation, on unless the variant observability=off leaves it out (issue 23).
    before = ENV_BEFORE.format(dispatch=dispatch, threads=threads, engine=engine, observability='PERFLAB_OBSERVABILITY="on"')
    assert without_comments(out / "app.env") == "".join(
        line + "\n" for line in before.splitlines() if line.split("=")[0] not in NOT_READ[app])
    # Added since as well: class data sharing, its archive per app in the unit's StateDirectory.
    cds = ["-XX:+AutoCreateSharedArchive", f"-XX:SharedArchiveFile=/var/lib/perflab-app/{app}.jsa"]
    jvm = "".join(f' "{option}"' for option in cds) + (' "-Xmx128m"' if profile == "io-vs-worker" else "")
    assert exec_start(out) == f"ExecStart=/opt/perflab/jdk/jlink-test/bin/java{jvm} -jar /opt/perflab/app/perflab-{app}.jar"
    assert "\nStateDirectory=perflab-app\n" in (out / "perflab-app.service").read_text()
    assert yaml.safe_load((out / "app_file_sd.yml").read_text()) == [{
        "targets": ["app.example:8080"],
        "labels": {"tier": "app", "host": "appx", "application": app, "__metrics_path__": "/metrics"}}]
    deployment = record["deployment"]
    assert deployment["app"] == app and deployment["profile"] == profile
    assert deployment["jvm_opts"] == cds + (["-Xmx128m"] if profile == "io-vs-worker" else [])
    assert "PERFLAB_DB_PASSWORD" not in deployment["env"] and "s3cret" not in json.dumps(record)
    assert record["jar_local"] == str(REPO / "apps" / app / "target" / f"perflab-{app}.jar")
    assert record["jar_remote"] == f"/opt/perflab/app/perflab-{app}.jar"
    assert "--url=http://127.0.0.1:8080/health/ready" in record["ready_argv"] and "--status=200" in record["ready_argv"]
    # The archive is kept for the code it was written for, the jar's bytes (and time) and the JDK build, and forgotten for any
    # other (perflab-app-ready --code).
    code = f"{hashlib.sha256(Path(record['jar_local']).read_bytes()).hexdigest()}:jlink-test"
    assert record["restart_argv"] == [*record["ready_argv"], "--restart", f"--forget-archive=/var/lib/perflab-app/{app}.jsa",
                                      f"--code={code}", f"--jar=/opt/perflab/app/perflab-{app}.jar"]


def test_class_data_sharing_can_be_turned_off(tmp_path: Path) -> None:
    (tmp_path / "off").mkdir()
    proc, record, out = render(tmp_path / "off", app_name="quarkus", app_class_data_sharing=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert exec_start(out) == "ExecStart=/opt/perflab/jdk/jlink-test/bin/java -jar /opt/perflab/app/perflab-quarkus.jar"
    assert record["deployment"]["jvm_opts"] == []
    assert record["restart_argv"] == [*record["ready_argv"], "--restart"]  # no archive to forget


def test_the_app_bound_profile_sets_a_cpu_quota_and_records_it(tmp_path: Path) -> None:
    """PROFILE=app-bound (field report 1, step 4): one CPU at a quarter of it, the unit's CPUQuota=;
    the other profiles set none."""
    proc, record, out = render(tmp_path, app_name="quarkus", app_profile="app-bound")
    assert proc.returncode == 0, proc.stdout[-3000:]
    unit = (out / "perflab-app.service").read_text()
    assert "\nCPUQuota=25%\n" in unit and record["deployment"]["cpu_quota_percent"] == 25
    (tmp_path / "default").mkdir()
    proc, record, out = render(tmp_path / "default", app_name="quarkus", app_profile="default")
    assert proc.returncode == 0 and "CPUQuota=" not in (out / "perflab-app.service").read_text()
    assert record["deployment"]["cpu_quota_percent"] is None


def test_a_foreign_app_gets_its_launch_its_variables_and_no_scrape(tmp_path: Path) -> None:
    """TechEmpower's Quarkus as a foreign app: a directory artifact, other variable names, no metrics."""
    (tmp_path / "quarkus-app").mkdir()
    (tmp_path / "quarkus-app" / "quarkus-run.jar").write_bytes(b"PK")
    foreign = tmp_path / "tfb-quarkus.yml"
    foreign.write_text(yaml.safe_dump({
        "name": "tfb-quarkus", "java": 21,
        "artifact": {"dir": str(tmp_path), "path": "quarkus-app"},
        "launch": {"jar": "quarkus-run.jar", "jvm_options": ["-Dquarkus.http.port=${http_port}", "-Dx=50%$$"],
                   "args": ["--profile", "a \"b\""]},
        "port": 8081, "readiness": {"path": "/plaintext"},
        "env": {"QUARKUS_DATASOURCE_USERNAME": "${db_user}", "QUARKUS_DATASOURCE_PASSWORD": "${db_password}",
                "QUOTED": 'say "hi"', "PASSWORD_FILE": "${db_password_file}"},
        "scenarios": ["plaintext-json"],
    }, sort_keys=False))
    proc, record, out = render(tmp_path, app_name=str(foreign))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert without_comments(out / "app.env") == (
        'QUARKUS_DATASOURCE_USERNAME="perflab"\nQUOTED="say \\"hi\\""\nPASSWORD_FILE="/etc/perflab/db-password"\n'
        'QUARKUS_DATASOURCE_PASSWORD="s3cret"\n')
    assert exec_start(out) == ('ExecStart=/opt/perflab/jdk/jlink-test/bin/java "-XX:+AutoCreateSharedArchive" '
                               '"-XX:SharedArchiveFile=/var/lib/perflab-app/tfb-quarkus.jsa" "-Dquarkus.http.port=8081" '
                               '"-Dx=50%%$$" -jar /opt/perflab/app/quarkus-app/quarkus-run.jar "--profile" "a \\"b\\""')
    assert yaml.safe_load((out / "app_file_sd.yml").read_text()) == []
    assert record["app"]["password_file"] and record["app"]["artifact"]["kind"] == "directory"
    assert record["jar_local"] == str(tmp_path / "quarkus-app" / "quarkus-run.jar")
    assert record["deployment"]["app"] == "tfb-quarkus" and record["deployment"]["variants"] == {}
    assert "--url=http://127.0.0.1:8081/plaintext" in record["ready_argv"]


@pytest.mark.parametrize(("extra", "message"), [
    ({"app_name": "tomcat"}, f"app: unknown app 'tomcat': the known apps are {KNOWN} (APP= takes one of them or the path "
                             "of a manifest file)"),
    ({"app_name": "quarkus", "app_variants": "threads=virtual"},
     "app: quarkus has no variant 'threads': its variants are dispatch: io|worker; observability: on|off"),
    ({"app_name": "spring-mvc", "app_spring_mvc_threads": "virtual"},
     "app: app_spring_mvc_threads no longer exist: the app's jar, port and variants come from its manifest"),
    ({"app_name": "spring-mvc", "app_profile": "report4"},
     "app: profile 'report4' is now 'virtual-threads-db', named after what the field report showed: "
     "use PROFILE=virtual-threads-db."),
])
def test_the_role_refuses_bad_input_in_one_message(tmp_path: Path, extra: dict[str, str], message: str) -> None:
    proc, record, _ = render(tmp_path, **extra)
    assert proc.returncode != 0 and record == {}
    assert message in " ".join(proc.stdout.split()), proc.stdout[-3000:]


def make_deploy(*variables: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", "deploy", *variables], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


def test_deploy_refuses_an_unknown_app_before_doing_anything() -> None:
    proc = make_deploy("APP=tomcat")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == (f"perflab app: unknown app 'tomcat': the known apps are {KNOWN} (APP= takes one "
                                           "of them or the path of a manifest file)"), proc.stderr
    assert "ansible-playbook" not in proc.stdout and "mvn" not in proc.stdout


@pytest.mark.parametrize(("variables", "message"), [
    (["APP=quarkus", "THREADS=virtual"], "perflab app: quarkus has no variant 'threads': its variants are dispatch: io|worker; observability: on|off"),
    (["APP=spring-mvc", "VARIANT=max_threads=300"], "perflab app: spring-mvc: variant max_threads has no option '300': use one of 200, 400"),
])
def test_deploy_refuses_a_variant_the_app_does_not_have_before_doing_anything(variables: list[str], message: str) -> None:
    proc = make_deploy(*variables)
    assert proc.returncode == 2 and proc.stderr.splitlines()[0] == message, proc.stderr
    assert "ansible-playbook" not in proc.stdout and "mvn" not in proc.stdout


def test_deploy_refuses_a_wrong_manifest_or_a_missing_artifact_before_doing_anything(tmp_path: Path) -> None:
    wrong = tmp_path / "mine.yml"
    wrong.write_text("name: mine\nartifact: {path: mine.jar}\nport: http\nreadiness: {path: /ready}\nscenarios: [greeting]\n")
    proc = make_deploy(f"APP={wrong}")
    assert proc.returncode == 2 and proc.stderr.splitlines()[0] == (
        f"perflab app: {wrong}: port: 'http' is a string, not a whole number; allowed: the TCP port the app listens on, "
        "1..65535 (${http_port} passes it to an app that reads it)"), proc.stderr
    wrong.write_text(wrong.read_text().replace("port: http", "port: 8080"))
    proc = make_deploy(f"APP={wrong}")
    assert proc.returncode == 2 and proc.stderr.splitlines()[0] == (
        f"perflab app: mine: the jar {tmp_path / 'mine.jar'} does not exist and its manifest has no build: build it, or fix "
        f"artifact.path in {wrong}"), proc.stderr
    assert "ansible-playbook" not in proc.stdout
