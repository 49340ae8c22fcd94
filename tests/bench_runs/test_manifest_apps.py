"""An app from a manifest the lab has not seen before, on the lab: an artifact that does not start
fails the deploy with its exit status and its last log lines, the unit stopped. The built-in
quarkus is deployed again at the end. (An app whose artifact is a directory and which declares no
metrics endpoint: TechEmpower's Quarkus in test_bench_runs.py.)"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench_helpers import ROOT, on_host, run_make, tail

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


@pytest.mark.no_load
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
