"""Two loadgen hosts send one run: the local lab with a second loadgen container (the same
inventory plus perflab-loadgen2, under a directory also named `local` so that it shares the lab's
secrets). Each host sends its share of the rate from one agreed instant; the merged result counts
exactly what the hosts sent, and the verdict and the attribution read both hosts. Afterwards the
second container goes and the lab is converged back to the default inventory. Docker provider only."""
from __future__ import annotations

import gzip
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from bench_helpers import INVENTORY, ROOT, new_run_dir, read_json, run_dirs, run_make, tail

SECOND = "perflab-loadgen2"
RATE, DURATION = 100, "10s"


@pytest.fixture(scope="module")
def two_loadgens(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if Path(INVENTORY).name != "local":
        pytest.skip("the second loadgen container is added to the local default (inventory/local)")
    inventory = tmp_path_factory.mktemp("two-loadgens") / "local"
    shutil.copytree(ROOT / INVENTORY, inventory)
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    loadgens = hosts["all"]["children"]["lab"]["children"]["loadgen"]["hosts"]
    loadgens[SECOND] = {"lab_containers_cpuset_cpus": "0", "lab_containers_memory": "1g"}
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    up = run_make("lab-up", f"INVENTORY={inventory}", timeout=1800)
    try:
        assert up.returncode == 0, "lab-up with a second loadgen host failed:\n" + tail(up.stdout, 80)
        yield str(inventory)
    finally:
        subprocess.run(["docker", "rm", "-f", SECOND], capture_output=True, timeout=120, check=False)
        back = run_make("lab-up", timeout=1800)  # Prometheus scrapes the default inventory's hosts again
        assert back.returncode == 0, tail(back.stdout, 60)


def sent(path: Path) -> int:
    with gzip.open(path, "rt") as results:
        return sum(1 for line in results if line.strip())


def test_two_loadgen_hosts_send_one_run_merged_exactly_and_judged_on_both(two_loadgens: str) -> None:
    before = run_dirs()
    done = run_make("bench", f"INVENTORY={two_loadgens}", "APP=quarkus", "SCENARIO=zipcodes", "TOOL=vegeta",
                    f"RATE={RATE}", f"DURATION={DURATION}", "WARMUP=0s")
    assert done.returncode == 0, tail(done.stdout, 80)
    run_dir = new_run_dir(before)
    per_host = {host: sent(run_dir / f"vegeta-measure.{host}.jsonl.gz") for host in ("perflab-loadgen", SECOND)}
    result = read_json(run_dir / "result.json")
    # Each host sent its half of the rate for the whole phase, and the merged count is their sum.
    assert per_host == {"perflab-loadgen": RATE // 2 * 10, SECOND: RATE // 2 * 10}, per_host
    assert result["requests"] == sum(per_host.values()), (result["requests"], per_host)
    assert not any(result["errors"].values()), result["errors"]
    parameters = result["scenario"]["parameters"]
    assert parameters["host_rates"] == "50,50"
    assert float(parameters["start_skew_ms"]) < 1000, parameters["start_skew_ms"]  # one agreed instant
    assert {h["host"] for h in result["hosts"] if h["tier"] == "loadgen"} == {"perflab-loadgen", SECOND}
    rules = {rule["rule"]: rule for rule in read_json(run_dir / "audit.json")["rules"]}
    assert rules["achieved_rate"]["status"] == "VALID", rules["achieved_rate"]
    assert "perflab-loadgen " in rules["loadgen_cpu"]["evidence"] and SECOND in rules["loadgen_cpu"]["evidence"], rules
    assert read_json(run_dir / "observations.json")["loadgen_hosts"].keys() == {"perflab-loadgen", SECOND}
    attribution = read_json(run_dir / "attribution.json")
    assert attribution["limiting_tier"] in (None, "app"), attribution["sentence"]
