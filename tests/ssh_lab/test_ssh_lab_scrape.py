"""A coarser scrape, set in its one documented place (issue 24): `lab_scrape_interval_s` in the inventory's
group_vars/all/lab.yml (README "The lab"). Until lab-up has given it to Prometheus, the bench refuses in one line
naming both intervals and that file, before anything changes; after it, the bench runs with it: its quiet time sized
to it (the interval and 1 s), bench-inputs.json carrying it, the run judged, and the statements per request read at
rest as at 5 s. Then 5 s again, for the tests after this one.

On the SSH lab, whose inventory is the test's own (tests/sshlab.py writes it), and right before its lock test: that
one waits for the local lab's share, and this fills the wait (conftest.py: _lab_order)."""
from __future__ import annotations

import re
import subprocess

import pytest

from labkit import INVENTORY, ROOT, SSH_LAB, judged, new_run_dir, read_json, run_dirs, tail
from labkit import make as run_make

pytestmark = pytest.mark.skipif(not SSH_LAB, reason="the SSH lab's tests run with PERFLAB_TEST_LAB=ssh (make test-lab)")
RATE = 50  # one the SSH lab's machines sustain, sharing two cores (test_ssh_lab.py)
# Two scrape intervals at least (the bench refuses less), and enough requests that the DB's own statements between two
# readings at rest blur statements per request by less than half of same_db_work's tolerance.
DURATION = "45s"
SETTING = re.compile(r"^lab_scrape_interval_s: \d+$", re.MULTILINE)


def bench() -> subprocess.CompletedProcess[str]:
    return run_make("bench", "APP=quarkus", "SCENARIO=zipcodes", f"RATE={RATE}", f"DURATION={DURATION}", "WARMUP=5s")


def test_a_15_s_scrape_set_in_group_vars_all_is_refused_until_lab_up_then_the_bench_runs_with_it(lab: str) -> None:
    settings = ROOT / INVENTORY / "group_vars" / "all" / "lab.yml"
    original = settings.read_text()
    assert len(SETTING.findall(original)) == 1, original
    try:
        settings.write_text(SETTING.sub("lab_scrape_interval_s: 15", original))
        before = run_dirs()
        refused = bench()
        words = " ".join(refused.stdout.split())
        assert refused.returncode != 0, tail(refused.stdout)
        assert "scrapes every 5 s, but the bench would read the run as scraped every 15 s (lab_scrape_interval_s)" in words, words
        assert re.search(r"Set lab_scrape_interval_s in one place, \S*group_vars/all/lab\.yml, then make lab-up\.", words), words
        assert run_dirs() == before, "refused before the run opened"

        up = run_make("lab-up")
        assert up.returncode == 0, tail(up.stdout, 80)
        before = run_dirs()
        done = bench()
        assert judged(done), tail(done.stdout, 80)
        run = new_run_dir(before)
        status = read_json(run / "status.json")
        assert status["status"] == "complete", (status, tail(done.stdout, 40), done.returncode)
        inputs = read_json(run / "bench-inputs.json")
        assert inputs["scrape_interval_s"] == 15 and inputs["quiet_s"] == 16, {k: inputs[k] for k in ("scrape_interval_s", "quiet_s")}
        assert status["verdict"] in ("VALID", "WARN"), status
        # Read at rest after the quiet time, the window's requests and statements are the contract's.
        rules = {rule["rule"]: rule for rule in read_json(run / "audit.json")["rules"]}
        assert rules["same_db_work"]["status"] == "VALID", rules["same_db_work"]
    finally:
        settings.write_text(original)
        back = run_make("lab-up")
    assert back.returncode == 0, tail(back.stdout, 80)

