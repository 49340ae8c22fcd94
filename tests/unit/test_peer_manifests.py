"""TechEmpower's own implementations in their PostgreSQL variants (apps/peers/tfb-*-postgresql.yml):
each claims TechEmpower's four database tests, speaks PostgreSQL only, is pointed at the lab's database
over TLS verified against the lab CA with the lab's pool, and starts as TechEmpower starts it (their
dockerfile's command, read from their checkout where it is here), on the paths the lab's scenarios send."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

from perflab import manifest
from perflab.manifest import ManifestError

ROOT = Path(__file__).resolve().parents[2]
TFB_DIR = Path(os.environ.get("PERFLAB_TFB_DIR") or ROOT.parent / "shared" / "peers" / "tfb-57d92fb")
DB_TESTS = ("db", "queries", "updates", "fortunes")
# Each database variant: the DB-free manifest of the same build, the project's app doing the same work,
# TechEmpower's framework directory, their test in benchmark_config.json and the file holding their start.
VARIANTS = {
    "tfb-quarkus-postgresql": ("tfb-quarkus", "quarkus", "quarkus", "hibernate-reactive", "run_quarkus.sh"),
    "tfb-spring-postgresql": ("tfb-spring", "spring-mvc", "spring", "default", "spring.dockerfile"),
    "tfb-spring-webflux-postgresql": ("tfb-spring-webflux", "spring-webflux", "spring-webflux", "default",
                                      "spring-webflux.dockerfile"),
}
# Their URL of each of the lab's database scenarios (benchmark_config.json's keys).
TFB_URLS = {"db": "db_url", "queries": "query_url", "updates": "update_url", "fortunes": "fortune_url"}
LAB = {"db_host": "db.example", "db_port": "5432", "db_name": "perflab", "db_user": "perflab",
       "db_password_file": "/etc/perflab/db-password", "db_ca_file": "/etc/perflab/db-ca.crt", "db_pool_size": "16",
       "db_engine": "postgresql"}


def deployed(name: str, **lab: str) -> dict[str, Any]:
    found = manifest.resolve(name)
    return manifest.deploy_vars(found, manifest.choose(found, []), {**LAB, **lab})


@pytest.mark.parametrize("name", VARIANTS)
def test_a_database_variant_claims_the_four_db_tests_on_postgresql_beside_our_app(name: str) -> None:
    sibling, counterpart = VARIANTS[name][:2]
    found = manifest.resolve(name)
    assert (found.name, found.builtin, found.scenarios, found.db_engines) == (name, False, DB_TESTS, ("postgresql",))
    assert found.counterpart == counterpart and manifest.resolve(counterpart).builtin
    assert found.readiness == manifest.Readiness("/db") and found.metrics is None
    # The same build as the DB-free manifest, in a directory of its own (tfb-build.sh's first argument).
    free = manifest.resolve(sibling)
    assert free.artifact.build is not None and found.artifact.build is not None
    assert found.artifact.build.command == tuple(name if part == sibling else part for part in free.artifact.build.command)
    assert found.artifact.path == free.artifact.path.replace(f"peers/{sibling}/", f"peers/{name}/")
    assert (found.artifact.build.env, found.java, found.launch.jar) == (free.artifact.build.env, free.java, free.launch.jar)
    # plaintext-json stays the DB-free manifest's, which runs whatever the db host's engine.
    assert free.scenarios == ("plaintext-json",) and "postgresql" in free.db_engines


@pytest.mark.parametrize("name", VARIANTS)
def test_a_database_variant_is_pointed_at_the_labs_postgresql_over_verified_tls(name: str) -> None:
    shown = deployed(name)
    env, secret = shown["env"], shown["password_env"]
    # The password only in the app's 0600 environment file, never a value shown or on the command line.
    assert len(secret) == 1 and secret[0].endswith("_PASSWORD") and secret[0] not in env
    values = " ".join(env.values())
    assert "db.example:5432/perflab" in values and "sslmode=disable" not in values.lower()
    assert [k for k, v in env.items() if v == "perflab"] and [k for k, v in env.items() if v == "16"]
    if name == "tfb-quarkus-postgresql":
        assert env["QUARKUS_DATASOURCE_REACTIVE_POSTGRESQL_SSL_MODE"] == "verify-ca"
        assert env["QUARKUS_DATASOURCE_REACTIVE_TRUST_CERTIFICATE_PEM_CERTS"] == "/etc/perflab/db-ca.crt"
    else:
        url = next(v for k, v in env.items() if k.endswith("_URL"))
        assert re.search(r"[?&]sslmode=verify-ca(&|$)", url) and re.search(r"(?i)[?&]sslrootcert=/etc/perflab/db-ca\.crt(&|$)", url)
    # Its port is the lab's to choose (the contract suite moves it).
    assert deployed(name)["port"] == 8080 and manifest.deploy_vars(manifest.resolve(name), {}, LAB, port=18080)["port"] == 18080


@pytest.mark.parametrize("name", VARIANTS)
def test_a_database_variant_is_refused_on_a_mysql_protocol_db_host(name: str) -> None:
    with pytest.raises(ManifestError, match=rf"^{name} speaks postgresql \(apps/peers/{name}\.yml: db_engines\), and the "
                                            r"lab's db host runs mariadb \(lab_db_engine\)$"):
        deployed(name, db_engine="mariadb")


def test_only_the_database_variants_claim_the_db_tests_among_the_peers() -> None:
    for scenario in DB_TESTS:
        peers = {m.name for m in manifest.claiming(scenario) if not m.builtin}
        assert peers == set(VARIANTS)
    assert not {m.name for m in manifest.claiming("plaintext-json")} & set(VARIANTS)


def start_command(file: Path) -> list[str]:
    """Their JVM options and program arguments: a dockerfile's CMD (a JSON array) or run_quarkus.sh's JAVA_OPTIONS."""
    text = file.read_text(encoding="utf-8")
    if file.suffix == ".dockerfile":
        command: list[str] = json.loads(re.findall(r"^CMD (\[.*\])\s*$", text, re.MULTILINE)[-1])
        jar = command.index("-jar")
        return [*command[1:jar], *command[jar + 2:]]
    options = re.search(r'JAVA_OPTIONS="(.*?)"', text, re.DOTALL)
    assert options is not None
    return [word for word in shlex.split(options.group(1).replace("\\\n", " ")) if word != "$@"]


@pytest.mark.skipif(not (TFB_DIR / "frameworks" / "Java").is_dir(), reason=f"no TechEmpower checkout at {TFB_DIR} (PERFLAB_TFB_DIR)")
@pytest.mark.parametrize("name", VARIANTS)
def test_a_database_variant_starts_as_techempower_starts_it_on_the_scenarios_paths(name: str) -> None:
    framework, test, start = VARIANTS[name][2:]
    directory = TFB_DIR / "frameworks" / "Java" / framework
    found = manifest.resolve(name)
    assert [*found.launch.jvm_options, *found.launch.args] == start_command(directory / start)
    config = json.loads((directory / "benchmark_config.json").read_text(encoding="utf-8"))
    urls = next(entry[test] for entry in config["tests"] if test in entry)
    assert urls["database"] == "Postgres"
    for scenario in found.scenarios:
        document = yaml.safe_load((ROOT / "scenarios" / f"{scenario}.yml").read_text(encoding="utf-8"))
        paths = {request["path"] for request in document["requests"]}
        assert paths and all(path.startswith(urls[TFB_URLS[scenario]]) for path in paths), (scenario, paths)
