"""Monitoring of the local lab, seen from the controller: every Prometheus target up with its
tier and host labels, process-exporter's per-tier groups (each container sees only its own
processes), the remote-write receiver closed, and Grafana installed or skipped with a clear warning."""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

import requests

from labkit import scrape_interval_s

PROMETHEUS = os.environ.get("PERFLAB_PROMETHEUS_URL", "http://127.0.0.1:9090")
GRAFANA = os.environ.get("PERFLAB_GRAFANA_URL", "http://127.0.0.1:3000")
GRAFANA_REPO_PROBE = "https://apt.grafana.com/dists/stable/Release"
TIER_OF_HOST = {
    "perflab-loadgen": "loadgen",
    "perflab-db": "db",
    "perflab-app": "app",
    "perflab-monitoring": "monitoring",
}
DB_HOST = "perflab-db"
MONITORING_HOST = "perflab-monitoring"
# First scrapes come one scrape interval (the inventory's) after Prometheus starts; exporters restarted by
# the last converge may need a few more. Past this, a target that is not up is a failure.
FIRST_SCRAPES_TIMEOUT_S = 120

T = TypeVar("T")


def poll(what: str, probe: Callable[[], T | None], timeout_s: float = FIRST_SCRAPES_TIMEOUT_S) -> T:
    """Call probe until it returns something other than None; fail naming `what` at the timeout."""
    deadline = time.monotonic() + timeout_s
    last_error = ""
    while True:
        try:
            result = probe()
            if result is not None:
                return result
        except requests.RequestException as error:
            last_error = f" (last error: {error})"
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout_s:.0f} s{last_error}")
        time.sleep(2)


def active_targets() -> list[dict[str, Any]]:
    response = requests.get(f"{PROMETHEUS}/api/v1/targets", params={"state": "active"}, timeout=5)
    response.raise_for_status()
    return response.json()["data"]["activeTargets"]


def query(promql: str) -> list[dict[str, Any]]:
    response = requests.get(f"{PROMETHEUS}/api/v1/query", params={"query": promql}, timeout=5)
    response.raise_for_status()
    return response.json()["data"]["result"]


def describe(targets: list[dict[str, Any]]) -> str:
    return "\n".join(f"  {t['labels'].get('job')} {t['scrapeUrl']} {t['health']} {t['lastError']}"
                     for t in targets)


def test_every_expected_target_is_up_with_tier_and_host_labels(lab: str) -> None:
    expected = {("node", host) for host in TIER_OF_HOST} | {("process", host) for host in TIER_OF_HOST}
    expected |= {("mysqld", DB_HOST), ("prometheus", MONITORING_HOST)}
    seen: list[dict[str, Any]] = []

    def all_up() -> list[dict[str, Any]] | None:
        seen[:] = active_targets()
        up = {(t["labels"].get("job"), t["labels"].get("host")) for t in seen if t["health"] == "up"}
        return seen if expected <= up else None

    try:
        targets = poll("every node, process, mysqld and prometheus target up", all_up)
    except AssertionError as error:
        raise AssertionError(f"{error}; targets:\n{describe(seen)}") from None

    counts = {job: sum(1 for t in targets if t["labels"].get("job") == job)
              for job in ("node", "process", "mysqld")}
    assert counts == {"node": 4, "process": 4, "mysqld": 1}, describe(targets)
    for target in targets:
        labels = target["labels"]
        assert "tier" in labels and "host" in labels, f"target without tier/host: {target['scrapeUrl']}"
        if labels["host"] in TIER_OF_HOST:
            assert labels["tier"] == TIER_OF_HOST[labels["host"]], target["scrapeUrl"]
    # No target anywhere is down: the app job's file_sd list is empty until an app is deployed.
    down = [t for t in targets if t["health"] != "up"]
    assert not down, describe(down)
    # Nor does any series outside these targets answer: the prometheus package's example config
    # (localhost:9100, no tier) scraped before ours took over, and per-tier sums must not see it.
    tierless = query('count by (job, instance) ({job=~".+", tier=""})')
    assert not tierless, [series["metric"] for series in tierless]


def test_process_groups_are_per_tier(lab: str) -> None:
    """mysqld burns CPU on the db host only, Prometheus runs on the monitoring host only: each
    container's process-exporter sees its own PID namespace, not the shared kernel's processes."""
    def hosts_running(group: str) -> dict[str, float] | None:
        result = query(f'namedprocess_namegroup_num_procs{{job="process",groupname="{group}"}} > 0')
        hosts = {sample["metric"]["host"]: float(sample["value"][1]) for sample in result}
        return hosts or None

    assert set(poll("a mysqld process group", lambda: hosts_running("mysqld"))) == {DB_HOST}
    assert set(poll("a prometheus process group", lambda: hosts_running("prometheus"))) == {MONITORING_HOST}

    def exporters_everywhere() -> dict[str, float] | None:
        hosts = hosts_running("exporters")
        return hosts if hosts and set(hosts) == set(TIER_OF_HOST) else None

    poll("an exporters process group on every host", exporters_everywhere)

    def mysqld_cpu() -> float | None:
        result = query(f'sum(namedprocess_namegroup_cpu_seconds_total{{groupname="mysqld",host="{DB_HOST}"}})')
        return float(result[0]["value"][1]) if result else None

    assert poll("mysqld CPU seconds", mysqld_cpu) > 0


def test_scrape_interval_retention_and_remote_write_flags(lab: str) -> None:
    flags = requests.get(f"{PROMETHEUS}/api/v1/status/flags", timeout=5).json()["data"]
    assert flags["web.enable-remote-write-receiver"] == "false"
    assert flags["storage.tsdb.retention.time"] == "15d"
    config = requests.get(f"{PROMETHEUS}/api/v1/status/config", timeout=5).json()["data"]["yaml"]
    assert f"scrape_interval: {scrape_interval_s()}s" in config  # the inventory's lab_scrape_interval_s


def test_remote_write_receiver_is_closed(lab: str) -> None:
    """Nothing of the lab pushes (vegeta is scraped): a write of a series the judge reads is refused.
    With the receiver on, an empty body is a bad request (400); with it off the route is 404."""
    response = requests.post(f"{PROMETHEUS}/api/v1/write", data=b"", timeout=5,
                             headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"})
    assert response.status_code == 404, (response.status_code, response.text)


def grafana_repo_reachable() -> bool:
    try:
        return requests.head(GRAFANA_REPO_PROBE, timeout=5).status_code == 200
    except requests.RequestException:
        return False


def test_grafana_is_up_or_skipped_with_a_warning_naming_the_variables(lab: str) -> None:
    if grafana_repo_reachable():
        health = requests.get(f"{GRAFANA}/api/health", timeout=5)
        assert health.status_code == 200, health.text
        assert "Grafana was skipped" not in lab
        return
    assert "WARNING: Grafana was skipped" in lab, "no Grafana warning in the lab-up output"
    warning = lab[lab.index("WARNING: Grafana was skipped"):]
    assert "grafana_apt_repo_url" in warning and "grafana_deb_path" in warning, warning[:800]
