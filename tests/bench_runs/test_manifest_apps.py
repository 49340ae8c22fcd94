"""Apps from manifests the lab has not seen before, on the lab: an app whose artifact is a
directory and which declares no metrics endpoint is deployed (its directory as one tar, unpacked
once), a warm re-deploy of it changes nothing, Prometheus does not scrape it, and a run of it
completes with the app's own metrics said to be unobserved; an artifact that does not start fails
the deploy with its exit status and its last log lines, the unit stopped. The built-in quarkus
is deployed again at the end. ~6 minutes."""
from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench_helpers import RESULTS, ROOT, changed_counts, new_run_dir, on_host, read_json, run_dirs, run_make, tail

QUARKUS_ENV = """\
env:
  PERFLAB_HTTP_PORT: "${http_port}"
  PERFLAB_DB_HOST: "${db_host}"
  PERFLAB_DB_PORT: "${db_port}"
  PERFLAB_DB_NAME: "${db_name}"
  PERFLAB_DB_USER: "${db_user}"
  PERFLAB_DB_CA_FILE: "${db_ca_file}"
  PERFLAB_DB_POOL_SIZE: "${db_pool_size}"
  PERFLAB_DB_PASSWORD: "${db_password}"
"""


@pytest.fixture(scope="module")
def quarkus_jar() -> Iterator[Path]:
    """The built-in quarkus's jar (make deploy builds it if need be); quarkus deployed again afterwards."""
    done = run_make("deploy", "APP=quarkus", timeout=1800)
    assert done.returncode == 0, tail(done.stdout)
    yield ROOT / "apps" / "quarkus" / "target" / "perflab-quarkus.jar"
    restored = run_make("deploy", "APP=quarkus", timeout=1200)
    assert restored.returncode == 0, tail(restored.stdout)


def test_a_directory_app_without_metrics_deploys_once_and_runs_unobserved(tmp_path: Path, quarkus_jar: Path) -> None:
    (tmp_path / "quarkus-dir").mkdir()
    shutil.copyfile(quarkus_jar, tmp_path / "quarkus-dir" / "run.jar")
    manifest = tmp_path / "quarkus-dir.yml"
    manifest.write_text(f"name: quarkus-dir\nartifact: {{path: quarkus-dir}}\nlaunch: {{jar: run.jar}}\nport: 8080\n"
                        f"readiness: {{path: /health/ready}}\n{QUARKUS_ENV}scenarios: [greeting]\n")
    done = run_make("deploy", f"APP={manifest}", timeout=1200)
    assert done.returncode == 0, tail(done.stdout)
    listed = on_host("app[0]", "ls /opt/perflab/app /opt/perflab/app/quarkus-dir")
    assert "run.jar" in listed and "perflab-quarkus.jar" not in listed, listed
    assert "[]" in on_host("monitoring[0]", "cat /etc/prometheus/file_sd/app.yml")
    # A warm re-deploy of an unchanged app changes nothing (make deploy restarts only what changed).
    again = run_make("deploy", f"APP={manifest}", timeout=1200)
    assert again.returncode == 0, tail(again.stdout)
    assert all(count == 0 for count in changed_counts(again.stdout).values()), tail(again.stdout, 120)
    before = run_dirs()
    run = run_make("bench", f"APP={manifest}", "SCENARIO=greeting", "RATE=50", "DURATION=20s", "WARMUP=0s", "TOOL=vegeta",
                   timeout=1800)
    assert run.returncode == 0, tail(run.stdout, 120)
    run_dir = new_run_dir(before)
    assert run_dir.name.endswith("-quarkus-dir-greeting") and read_json(run_dir / "status.json")["status"] == "complete"
    unobserved = read_json(run_dir / "observations.json")["unobserved"]
    assert "declares no metrics endpoint is not scraped" in unobserved["statements_per_request"], unobserved
    assert read_json(run_dir / "result.json")["app"]["name"] == "quarkus-dir" and run_dir.parent == RESULTS


def test_an_artifact_that_does_not_start_is_its_exit_status_and_last_log_lines(tmp_path: Path, quarkus_jar: Path) -> None:
    (tmp_path / "broken.jar").write_text("not a jar\n")
    manifest = tmp_path / "broken.yml"
    manifest.write_text(f"name: broken\nartifact: {{path: broken.jar}}\nport: 8080\nreadiness: {{path: /health/ready}}\n"
                        f"{QUARKUS_ENV}scenarios: [greeting]\n")
    done = run_make("deploy", f"APP={manifest}", timeout=1200)
    assert done.returncode != 0
    text = " ".join(done.stdout.split())
    assert "perflab-app: the app exited with status 1" in text and "perflab-app is stopped" in text, tail(done.stdout, 80)
    assert "Invalid or corrupt jarfile" in text, tail(done.stdout, 80)
    assert on_host("app[0]", "systemctl is-active perflab-app || true").split()[-1] in ("inactive", "failed")
