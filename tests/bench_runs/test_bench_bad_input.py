"""Bad input: one clear error, no results directory and no change on any host."""
from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from bench_helpers import INVENTORY, ROOT, changed_counts, on_host, run_dirs, run_make, tail
from labkit import scrape_interval_s

# Every run here is refused before any load: they run while the lab's first run waits (conftest.py).
pytestmark = pytest.mark.no_load

# A wrk2 commit the loadgen host has not built, so that the refusals below cannot lean on a wrk2
# an earlier run left there, and an upstream that answers nowhere (a closed port on the host).
NOT_BUILT = "-e loadgen_wrk2_version=" + "0" * 40 + " -e loadgen_wrk2_git_repo=http://127.0.0.1:9/wrk2.git"
# The pinned wrk2 source: CI's mirror ($PERFLAB_WRK2_ARCHIVE, set by .ci/run), else that test mirror where
# CI keeps it beside the checkout; without either the sha256 test below is skipped.
MIRROR = os.environ.get("PERFLAB_WRK2_ARCHIVE") or str(
    ROOT.parent / "shared/mirrors/wrk2-44a94c17d8e6a0bac8559b53da76848e430cb7a7.tar.gz")

# The inventory's lab_scrape_interval_s (inventory/local: 2 s), which the messages below name.
SCRAPE_S = scrape_interval_s(INVENTORY)
BAD_INPUT = [
    (["APP=struts", "SCENARIO=greeting"],
     "perflab app: unknown app 'struts': the known apps are petclinic, quarkus, spring-mvc, spring-webflux, tfb-quarkus, "
     "tfb-quarkus-postgresql, tfb-spring, tfb-spring-postgresql, tfb-spring-webflux, tfb-spring-webflux-postgresql "
     "(APP= takes one of"),
    (["APP=quarkus", "SCENARIO=greeting", "THREADS=virtual"],
     "perflab app: quarkus has no variant 'threads': its variants are dispatch: io|worker; observability: on|off"),
    (["APP=quarkus", "SCENARIO=greeting", "ANSIBLE_ARGS=-e app_spring_mvc_threads=virtual"],
     "app: app_spring_mvc_threads no longer exist: the app's jar, port and variants come from its manifest"),
    (["APP=quarkus", "SCENARIO=nosuch"], "unknown SCENARIO 'nosuch'"),
    (["APP=quarkus", "SCENARIO=greeting", "RATE=0"], "RATE must be a whole number of requests per second > 0, got '0'"),
    (["APP=quarkus", "SCENARIO=greeting", "RATE=-5"], "RATE must be a whole number of requests per second > 0, got '-5'"),
    (["APP=quarkus", "SCENARIO=greeting", "RATE=fast"], "RATE must be a whole number of requests per second > 0, got 'fast'"),
    (["APP=quarkus", "SCENARIO=greeting", "DURATION=0s"], "DURATION must be a number > 0"),
    (["APP=quarkus", "SCENARIO=greeting", "DURATION=1s"],
     f"bench: DURATION=1s is shorter than two scrape intervals ({2 * SCRAPE_S} s): Prometheus would see at most one "
     f"sample of the measured phase, too few to judge any tier. Use DURATION={2 * SCRAPE_S}s or more."),
    (["APP=quarkus", "SCENARIO=greeting", "TOOL=wrk2", "DURATION=10s", "WARMUP=0s",
      "ANSIBLE_ARGS=-e loadgen_wrk2_min_invocation_s=30"],
     "wrk2 falls short of its rate in invocations under 30 s, and the measured one runs DURATION (10s) plus its 11 s"),
    (["APP=quarkus", "SCENARIO=greeting", "RATE=1000000000"],
     "loadgen: RATE 1000000000 asks perflab-loadgen to send 1000000000 req/s, but "),
    # An app that does not speak the db host's engine: test_postgresql_runs (the lab's own apps speak all three).
    (["APP=quarkus", "SCENARIO=greeting", "ANSIBLE_ARGS=--check"],
     "bench: a run cannot be dry-run (--check): it is made of changes (the DB reset, the app's restart, the load)."),
    (["APP=quarkus", "SCENARIO=greeting", "TOOL=gatling"], "TOOL (loadgen_tool) must be auto, wrk2 or vegeta (got 'gatling')"),
    (["APP=quarkus", "SCENARIO=greeting", "TOOL=k6"], "loadgen: k6 is no longer supported (AGPL"),
    (["APP=quarkus", "SCENARIO=greeting", "TOOL=wrk2", f"ANSIBLE_ARGS={NOT_BUILT} -e loadgen_wrk2_archive_path="],
     "loadgen: TOOL=wrk2 cannot run on perflab-loadgen: wrk2 cannot be built: no archive on the controller"),
    (["APP=quarkus", "SCENARIO=greeting", "DB_DELAY_MS=lots"], "DB_DELAY_MS must be a whole number of milliseconds >= 0, got 'lots'"),
    (["APP=quarkus", "SCENARIO=greeting", "DB_CPU_HOG=-1"], "DB_CPU_HOG must be a whole number of busy loops from 0 to 256, got '-1'"),
    (["APP=quarkus", "SCENARIO=greeting", "PROFILE=io-vs-worker"], "app: profile 'io-vs-worker' asks for 4 CPUs"),
    (["APP=quarkus", "SCENARIO=greeting", "PROFILE=report3"],
     "app: profile 'report3' is now 'io-vs-worker', named after what the field report showed: use PROFILE=io-vs-worker."),
    (["APP=quarkus", "SCENARIO=greeting", f"ANSIBLE_ARGS=-e bench_quiet_s={SCRAPE_S}"],
     f"bench_quiet_s must be whole seconds longer than the scrape interval ({SCRAPE_S} s), at least {SCRAPE_S + 1}: "
     f"got '{SCRAPE_S}'"),
    (["APP=quarkus", "SCENARIO=greeting", "ANSIBLE_ARGS=-e prometheus_scrape_interval=15s"],
     "bench: perflab-monitoring sets prometheus_scrape_interval to '15s', but the run's windows follow lab_scrape_interval_s "
     f"({SCRAPE_S} s). Set lab_scrape_interval_s instead."),
    # Prometheus runs at the inventory's interval: a bench that would read the run at another one is refused.
    (["APP=quarkus", "SCENARIO=greeting", "ANSIBLE_ARGS=-e lab_scrape_interval_s=15"],
     f"bench: Prometheus at http://127.0.0.1:9090 scrapes every {SCRAPE_S} s, but the bench would read the run as scraped every 15 s "
     "(lab_scrape_interval_s). Set lab_scrape_interval_s in one place, "),
    (["APP=quarkus", "SCENARIO=greeting", "ANSIBLE_ARGS=-e lab_scrape_interval_s=5.5"],
     "bench: lab_scrape_interval_s must be whole seconds > 0, got '5.5'."),
]


@pytest.mark.parametrize(("variables", "message"), BAD_INPUT, ids=[" ".join(v) for v, _ in BAD_INPUT])
def test_bad_input_is_refused_before_any_change(variables: list[str], message: str) -> None:
    before = run_dirs()
    done = run_make("bench", *variables, timeout=600)
    assert done.returncode != 0, tail(done.stdout)
    assert message in " ".join(done.stdout.split()), tail(done.stdout)
    # Said once, on one line, without the task's source (plugins/callback/perflab.py).
    assert done.stdout.count(message.split(": ", 1)[-1][:60]) == 1 and "Origin:" not in done.stdout, tail(done.stdout)
    assert run_dirs() == before, "a refused run must not create results/<run-id>/"
    changed = changed_counts(done.stdout)
    assert all(count == 0 for count in changed.values()), f"a refused run changed something: {changed}\n{tail(done.stdout)}"


def test_wrk2_archive_with_another_sha256_is_refused_before_any_change() -> None:
    if not Path(MIRROR).is_file():
        pytest.skip(f"no wrk2 archive at {MIRROR} (CI's mirror): nothing to verify a sha256 against")
    before = run_dirs()
    done = run_make("bench", "APP=quarkus", "SCENARIO=greeting", "TOOL=wrk2",
                    f"ANSIBLE_ARGS={NOT_BUILT} -e loadgen_wrk2_archive_path={MIRROR} -e loadgen_wrk2_archive_sha256={'1' * 64}",
                    timeout=600)
    assert done.returncode != 0, tail(done.stdout)
    assert (f"the archive {MIRROR} on the controller has sha256 "
            f"a125030d8bffe9774c79769849673fbdd074dd5eee62c2c3335016a202de8778, not loadgen_wrk2_archive_sha256 {'1' * 64}"
            in " ".join(done.stdout.split())), tail(done.stdout)
    assert run_dirs() == before, "a refused run must not create results/<run-id>/"
    assert all(count == 0 for count in changed_counts(done.stdout).values()), tail(done.stdout)


@contextmanager
def mirror_serving(archive: Path) -> Iterator[str]:
    """A mirror on the controller serving ARCHIVE, at the address the loadgen host routes to it
    (its default gateway: the controller, for the lab's containers); yields the archive's URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(archive.parent))
    server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        route = re.search(r"default via (\S+)", on_host("loadgen[0]", "ip route show default"))
        assert route, "the loadgen host has no default route to reach the controller's mirror"
        yield f"http://{route.group(1)}:{server.server_address[1]}/{archive.name}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_mirror_serving_other_bytes_is_refused_before_the_run_opens() -> None:
    """loadgen_wrk2_archive_url: the archive is read and hashed before the run opens; other bytes
    than the pinned sha256 are one line, no results directory, nothing changed."""
    if not Path(MIRROR).is_file():
        pytest.skip(f"no wrk2 archive at {MIRROR} (CI's mirror): nothing to serve")
    before = run_dirs()
    with mirror_serving(Path(MIRROR)) as url:
        done = run_make("bench", "APP=quarkus", "SCENARIO=greeting", "TOOL=wrk2",
                        f"ANSIBLE_ARGS={NOT_BUILT} -e loadgen_wrk2_archive_path= -e loadgen_wrk2_archive_url={url} "
                        f"-e loadgen_wrk2_archive_sha256={'1' * 64}", timeout=600)
    assert done.returncode != 0, tail(done.stdout)
    assert (f"wrk2 cannot be built: no archive on the controller (loadgen_wrk2_archive_path, $PERFLAB_WRK2_ARCHIVE); "
            f"the archive at {url} has sha256 a125030d8bffe9774c79769849673fbdd074dd5eee62c2c3335016a202de8778, "
            f"not loadgen_wrk2_archive_sha256 {'1' * 64}" in " ".join(done.stdout.split())), tail(done.stdout)
    assert run_dirs() == before, "a refused run must not create results/<run-id>/"
    assert all(count == 0 for count in changed_counts(done.stdout).values()), tail(done.stdout)


def test_a_wrong_manifest_and_a_missing_artifact_are_refused_before_any_change(tmp_path: Path) -> None:
    """APP= a manifest's path: a wrong field, and an artifact that is not there, are one line each."""
    manifest = tmp_path / "mine.yml"
    manifest.write_text("name: mine\nartifact: {path: mine.jar}\nport: 8080\nreadiness: {path: health}\nscenarios: [greeting]\n")
    before = run_dirs()
    done = run_make("bench", f"APP={manifest}", "SCENARIO=greeting", timeout=600)
    assert done.returncode != 0 and "PLAY" not in done.stdout, tail(done.stdout)
    assert (f"perflab app: {manifest}: readiness.path: 'health' is not allowed; allowed: a URL path starting with '/'"
            in done.stdout), tail(done.stdout)
    manifest.write_text(manifest.read_text().replace("path: health", "path: /health"))
    done = run_make("bench", f"APP={manifest}", "SCENARIO=greeting", timeout=600)
    assert done.returncode != 0 and "PLAY" not in done.stdout, tail(done.stdout)
    assert (f"perflab app: mine: the jar {tmp_path / 'mine.jar'} does not exist and its manifest has no build: build it, "
            f"or fix artifact.path in {manifest}") in done.stdout, tail(done.stdout)
    assert run_dirs() == before


def test_an_inventory_that_colocates_tiers_is_refused_by_the_bench_too(tmp_path: Path) -> None:
    """lab-up refuses tiers sharing a machine; a bench on such an inventory is refused the same way."""
    inventory = tmp_path / "colocated"
    shutil.copytree(ROOT / INVENTORY, inventory)
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    tiers = hosts["all"]["children"]["lab"]["children"]
    db_host, app_host = next(iter(tiers["db"]["hosts"])), next(iter(tiers["app"]["hosts"]))
    app_machine = (tiers["app"]["hosts"][app_host] or {}).get("ansible_host", app_host)
    tiers["db"]["hosts"][db_host] = {**(tiers["db"]["hosts"][db_host] or {}), "ansible_host": app_machine}
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    before = run_dirs()
    done = run_make("bench", f"INVENTORY={inventory}", "APP=quarkus", "SCENARIO=greeting", timeout=600)
    assert done.returncode != 0, tail(done.stdout)
    assert (f"tiers db (host {db_host}), app (host {app_host}) share machine {app_machine}"
            in " ".join(done.stdout.split())), tail(done.stdout)
    assert run_dirs() == before
