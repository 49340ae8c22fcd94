"""Scenario files and the loadgen role's scenario loader, as the bench uses them, plus the
bad-input checks of `make deploy`. Runs on the controller only (no lab needed), ~30 s.

Run standalone: .venv/bin/pytest -q tests/deploy
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = sorted(p.stem for p in (REPO / "scenarios").glob("*.yml"))
INVENTORY = """\
all:
  children:
    lab:
      children:
        loadgen: {hosts: {lg: {ansible_connection: local, ansible_python_interpreter: '{{ ansible_playbook_python }}'}}}
        app: {hosts: {appx: {lab_address: app.example}}}
        monitoring: {hosts: {mon: {lab_address: mon.example}}}
"""


def load_scenario(tmp_path: Path, **extra: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(INVENTORY)
    out = tmp_path / "run.json"
    argv = [
        str(REPO / ".venv/bin/ansible-playbook"), "-i", str(inventory),
        str(REPO / "tests/deploy/scenario_check.yml"),
        "-e", f"loadgen_scenarios_dir={REPO / 'scenarios'}", "-e", f"scenario_out={out}",
    ]
    for name, value in extra.items():
        argv += ["-e", f"{name}={value}"]
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    return proc, (json.loads(out.read_text()) if out.exists() else {})


def test_the_four_workloads_exist() -> None:
    assert SCENARIOS == ["books-orders", "greeting", "hello-latency", "zipcodes"]
    for name in SCENARIOS:
        data = yaml.safe_load((REPO / "scenarios" / f"{name}.yml").read_text())
        assert data["name"] == name
        for key in ("rate", "duration", "warmup", "slo_p99_ms", "connections", "threads", "endpoints", "script"):
            assert key in data, f"{name}: {key} missing"


@pytest.mark.parametrize("tool", ["k6", "wrk2"])
def test_zipcodes_run_as_the_bench_would(tmp_path: Path, tool: str) -> None:
    proc, run = load_scenario(tmp_path, loadgen_scenario="zipcodes", loadgen_tool=tool,
                              loadgen_rate="123", loadgen_duration="2m")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert run["scenario"]["rate"] == 123 and run["duration_s"] == 120 and run["warmup_s"] == 30
    assert run["scenario"]["slo_p99_ms"] == 50.0
    warm, measure = run["phases"]["warmup"], run["phases"]["measure"]
    # Warm-up and measured phase write different fresh keys.
    assert warm["environment"]["KEY_PHASE"] != measure["environment"]["KEY_PHASE"]
    assert measure["environment"]["WRITE_RATIO"] == "0.5"
    if tool == "k6":
        assert measure["argv"][-1].endswith("/k6/zipcodes.js")
        assert measure["environment"]["RATE"] == "123" and measure["environment"]["DURATION"] == "2m"
        assert "experimental-prometheus-rw" in measure["argv"]
        assert measure["environment"]["K6_PROMETHEUS_RW_SERVER_URL"] == "http://mon.example:9090/api/v1/write"
        assert measure["environment"]["BASE_URL"] == "http://app.example:8080"
    else:
        assert measure["argv"][measure["argv"].index("-R") + 1] == "123"
        assert measure["argv"][-1] == "http://app.example:8080"
        assert measure["environment"]["WRK_THREADS"] == "2"


def test_slo_override_is_the_slo_as_run(tmp_path: Path) -> None:
    proc, run = load_scenario(tmp_path, loadgen_scenario="greeting", loadgen_slo_p99_ms="12.5")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert run["scenario"]["slo_p99_ms"] == 12.5


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_scenario_loads_for_k6(tmp_path: Path, name: str) -> None:
    proc, run = load_scenario(tmp_path, loadgen_scenario=name, loadgen_tool="k6")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert run["phases"]["measure"]["argv"][-1].endswith(f"/k6/{name}.js")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"loadgen_scenario": "nope"}, "unknown SCENARIO 'nope': use one of books-orders, greeting, hello-latency, zipcodes"),
        ({"loadgen_scenario": "greeting", "loadgen_rate": "0"}, "RATE must be a whole number > 0"),
        ({"loadgen_scenario": "greeting", "loadgen_rate": "-5"}, "RATE must be a whole number > 0"),
        ({"loadgen_scenario": "greeting", "loadgen_duration": "soon"}, "DURATION and warmup a number with s, m or h"),
        ({"loadgen_scenario": "greeting", "loadgen_tool": "wrk2", "loadgen_duration": "10s"}, "calibration"),
        ({"loadgen_scenario": "greeting", "loadgen_slo_p99_ms": "fast"}, "SLO_P99_MS / slo_p99_ms a number of milliseconds > 0 (got 'fast')"),
        ({"loadgen_scenario": "greeting", "loadgen_slo_p99_ms": "0"}, "SLO_P99_MS / slo_p99_ms a number of milliseconds > 0 (got '0')"),
    ],
)
def test_bad_scenario_input_is_refused_clearly(tmp_path: Path, extra: dict[str, str], message: str) -> None:
    proc, run = load_scenario(tmp_path, **extra)
    assert proc.returncode != 0 and run == {}
    assert message in " ".join(proc.stdout.split()), proc.stdout[-3000:]


def test_deploy_refuses_an_unknown_app_before_doing_anything() -> None:
    proc = subprocess.run(["make", "--no-print-directory", "deploy", "APP=tomcat"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "unknown APP 'tomcat': use APP=quarkus, APP=spring-webflux or APP=spring-mvc" in proc.stderr
    assert "ansible-playbook" not in proc.stdout and "mvn" not in proc.stdout


@pytest.mark.skipif(shutil.which("k6") is None, reason="k6 is not installed on the controller")
@pytest.mark.parametrize("name", SCENARIOS)
def test_k6_scripts_run_at_a_constant_arrival_rate_from_env(name: str) -> None:
    settings = ["-e", "RATE=321", "-e", "DURATION=7s", "-e", "PRE_ALLOCATED_VUS=9", "-e", "MAX_VUS=11"]
    proc = subprocess.run(["k6", "inspect", *settings, str(REPO / f"roles/loadgen/files/k6/{name}.js")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    scenario = json.loads(proc.stdout)["scenarios"][name]
    assert scenario["executor"] == "constant-arrival-rate"
    assert (scenario["rate"], scenario["duration"], scenario["preAllocatedVUs"], scenario["maxVUs"]) == (321, "7s", 9, 11)
