"""App manifests (perflab/manifest.py): the schema and the model agree, every wrong field is one
message naming the file, the field, what is wrong and what is allowed, variants resolve, and the
three built-in apps render the deployment role `app` made before manifests (same environment,
JVM options, jar, endpoints)."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
import yaml  # type: ignore[import-untyped]

from perflab import app_build, app_cli, cli, compare, manifest
from perflab.manifest import Manifest, ManifestError

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = ("quarkus", "spring-mvc", "spring-webflux")
# TechEmpower's own implementations (apps/peers/), which serve plaintext-json only.
FOREIGN = ("tfb-quarkus", "tfb-spring", "tfb-spring-webflux")
# Their database variants, on TechEmpower's four database tests (apps/peers/*-postgresql.yml).
FOREIGN_DB = ("tfb-quarkus-postgresql", "tfb-spring-postgresql", "tfb-spring-webflux-postgresql")
KNOWN = ("petclinic, quarkus, spring-mvc, spring-webflux, tfb-quarkus, tfb-quarkus-postgresql, tfb-spring, "
         "tfb-spring-postgresql, tfb-spring-webflux, tfb-spring-webflux-postgresql")
# Spring PetClinic: a user's app, its own database and its own scenario file.
USER_APPS = ("petclinic",)
SCENARIOS = sorted(p.stem for p in (ROOT / "scenarios").glob("*.yml"))

# What role app passes as the lab's variables (roles/app/vars/main.yml __app_lab, its defaults).
LAB = {"db_host": "db.example", "db_port": "3306", "db_name": "perflab", "db_user": "perflab",
       "db_password_file": "/etc/perflab/db-password", "db_ca_file": "/etc/perflab/db-ca.crt", "db_pool_size": "16",
       "db_engine": "mariadb"}


def role_env_before_manifests(dispatch: str = "io", threads: str = "platform", max_threads: str = "200") -> dict[str, str]:
    """The environment role app wrote for every app before manifests (its vars/main.yml __app_env
    with the defaults of defaults/main.yml; app_quarkus_greeting_dispatch, app_spring_mvc_threads
    and app_spring_mvc_max_threads were DISPATCH=, THREADS= and report 2's 400), the password apart."""
    return {
        "PERFLAB_HTTP_PORT": "8080", "PERFLAB_DB_HOST": "db.example", "PERFLAB_DB_PORT": "3306",
        "PERFLAB_DB_NAME": "perflab", "PERFLAB_DB_USER": "perflab", "PERFLAB_DB_CA_FILE": "/etc/perflab/db-ca.crt",
        "PERFLAB_DB_POOL_SIZE": "16", "PERFLAB_GREETING_DISPATCH": dispatch, "PERFLAB_THREADS": threads,
        "PERFLAB_MAX_THREADS": max_threads,
    }


def app_sources(app: str) -> str:
    return "\n".join(p.read_text(errors="replace") for p in (ROOT / "apps" / app / "src").rglob("*") if p.is_file())


def valid() -> dict[str, Any]:
    """A manifest with every field, the base of the bad-input cases."""
    return {
        "name": "demo", "description": "a demo", "java": 21,
        "artifact": {"path": "target/demo.jar", "dir": ".", "build": {"command": ["true"], "env": {"A": "b"}, "sources": ["src"]}},
        "launch": {"jvm_options": ["-Xss1m"], "args": ["--port=${http_port}"]},
        "port": 8080,
        "readiness": {"path": "/health/ready", "status": 200},
        "metrics": {"path": "/metrics"},
        "env": {"DB_HOST": "${db_host}", "DB_PASSWORD": "${db_password}"},
        "scenarios": ["greeting"],
        "variants": {"threads": {"description": "d", "default": "platform",
                                 "options": {"platform": {}, "virtual": {"env": {"T": "v"}, "java": 21}}}},
    }


def write(tmp_path: Path, document: Any, name: str = "demo.yml") -> Path:
    file = tmp_path / name
    file.write_text(document if isinstance(document, str) else yaml.safe_dump(document, sort_keys=False))
    return file


def problems(tmp_path: Path, document: Any) -> tuple[str, ...]:
    with pytest.raises(ManifestError) as refused:
        manifest.load(write(tmp_path, document))
    return refused.value.problems


# ---------------------------------------------------------------------------------------------
# The schema and the model


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(manifest.schema())


def _schema_fields(node: dict[str, Any], root: dict[str, Any]) -> set[str]:
    node = manifest._resolve_ref(root, node)
    return set(node["properties"])


@pytest.mark.parametrize(("model", "path"), [
    (Manifest, []), (manifest.Artifact, ["artifact"]), (manifest.Build, ["artifact", "build"]),
    (manifest.Launch, ["launch"]), (manifest.Readiness, ["readiness"]), (manifest.Metrics, ["metrics"]),
    (manifest.Variant, ["variants", "*"]), (manifest.Option, ["variants", "*", "options", "*"]),
    (manifest.Database, ["database"]),
])
def test_the_schema_and_the_model_name_the_same_fields(model: type, path: list[str]) -> None:
    root = manifest.schema()
    node = root
    for part in path:
        node = manifest._resolve_ref(root, node)
        node = node["additionalProperties"] if part == "*" else node["properties"][part]
    model_fields = {f.name for f in dataclasses.fields(model)} - {"file"}
    assert _schema_fields(node, root) == model_fields


def test_a_manifest_with_every_field_loads_into_the_model(tmp_path: Path) -> None:
    loaded = manifest.load(write(tmp_path, valid()))
    assert loaded.artifact.build == manifest.Build(("true",), {"A": "b"}, ("src",))
    assert loaded.launch == manifest.Launch(None, ("-Xss1m",), ("--port=${http_port}",))
    assert loaded.variants["threads"].options["virtual"] == manifest.Option({"T": "v"}, (), (), 21)
    assert (loaded.java, loaded.metrics, loaded.readiness) == (21, manifest.Metrics("/metrics"), manifest.Readiness("/health/ready"))
    assert not loaded.builtin


def test_the_builtin_apps_are_the_known_ones_and_load() -> None:
    # The project's own apps and the foreign ones of apps/peers/, by name.
    assert list(manifest.known()) == sorted([*BUILTIN, *FOREIGN, *FOREIGN_DB, *USER_APPS])
    for name in FOREIGN:
        loaded = manifest.resolve(name)
        assert loaded.name == name and not loaded.builtin and loaded.scenarios == ("plaintext-json",)
    for name in FOREIGN_DB:
        loaded = manifest.resolve(name)
        assert loaded.name == name and not loaded.builtin and loaded.scenarios == ("db", "queries", "updates", "fortunes")
    for name in BUILTIN:
        loaded = manifest.resolve(name)
        assert loaded.name == name and loaded.builtin and loaded.scenarios == tuple(SCENARIOS)


# ---------------------------------------------------------------------------------------------
# One message per wrong field: the file, the field, what is wrong, what is allowed


def _without(path: list[str]) -> Any:
    def change(doc: dict[str, Any]) -> None:
        node = doc
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]
    return change


def _set(path: list[Any], value: Any) -> Any:
    def change(doc: dict[str, Any]) -> None:
        node = doc
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
    return change


BAD_FIELDS = [
    (_without(["name"]), "name: missing; allowed: lower-case letters, digits and '-'"),
    (_set(["name"], "Demo App"), "name: 'Demo App' is not allowed; allowed: lower-case letters"),
    (_set(["prot"], 8080), "prot: unknown field; the fields here are name, description, java, artifact, launch, port"),
    (_set(["java"], 11), "java: 11 is out of range; allowed: the lowest Java feature version the app runs on, 17..99"),
    (_without(["artifact"]), "artifact: missing; allowed: a mapping with path (required), dir, by_db_engine and build"),
    (_set(["artifact"], "demo.jar"), "artifact: 'demo.jar' is a string, not a mapping; allowed: a mapping with path"),
    (_without(["artifact", "path"]), "artifact.path: missing; allowed: the runnable jar, or the directory that holds it"),
    (_set(["artifact", "path"], ""), "artifact.path: is empty; allowed: the runnable jar"),
    (_set(["artifact", "dir"], "${1DIR}"), "artifact.dir: ${1DIR} is not ${VAR} or ${VAR:-default}"),
    (_set(["artifact", "build", "command"], []), "artifact.build.command: is empty; allowed: a non-empty list of strings"),
    (_set(["artifact", "build", "command"], "mvn package"), "artifact.build.command: 'mvn package' is a string, not a list"),
    (_set(["artifact", "build", "sources"], ["src", 3]), "artifact.build.sources[1]: 3 is a number, not a string"),
    (_set(["artifact", "build", "shell"], True), "artifact.build.shell: unknown field; the fields here are command, env, sources"),
    (_set(["launch", "jar"], "../run.jar"), "launch.jar: '../run.jar' is not allowed; allowed: with a directory artifact, the jar"),
    (_set(["launch", "jvm_options"], "-Xmx1g"), "launch.jvm_options: '-Xmx1g' is a string, not a list; allowed: a list of strings"),
    (_set(["launch", "args"], ["--pw=${db_password}"]), "launch.args[0]: ${db_password} may only be a whole env value"),
    (_set(["launch", "args"], ["--host=${db_hots}"]), "launch.args[0]: ${db_hots} is not a lab variable; the lab's variables are ${http_port}"),
    (_without(["port"]), "port: missing; allowed: the TCP port the app listens on, 1..65535"),
    (_set(["port"], "8080"), "port: '8080' is a string, not a whole number; allowed: the TCP port"),
    (_set(["port"], 70000), "port: 70000 is out of range; allowed: the TCP port the app listens on, 1..65535"),
    (_without(["readiness", "path"]), "readiness.path: missing; allowed: a URL path starting with '/'"),
    (_set(["readiness", "path"], "health"), "readiness.path: 'health' is not allowed; allowed: a URL path starting with '/'"),
    (_set(["readiness", "status"], 99), "readiness.status: 99 is out of range; allowed: the HTTP status the endpoint answers"),
    (_set(["metrics"], {}), "metrics.path: missing; allowed: a URL path starting with '/'"),
    (_set(["metrics"], "/metrics"), "metrics: '/metrics' is a string, not a mapping; allowed: a mapping with path (required); leave"),
    (_set(["env", "DB_PORT"], 3306), "env.DB_PORT: 3306 is a number, not a string; allowed: a string on one line (quote numbers"),
    (_set(["env", "1DB"], "x"), "env.1DB: '1DB' is not allowed as a name here; allowed: an environment variable's name"),
    (_set(["env", "DB_HOST"], "${db_hots}"), "env.DB_HOST: ${db_hots} is not a lab variable"),
    (_set(["env", "DB_URL"], "mysql://u:${db_password}@h"), "env.DB_URL: ${db_password} may only be a whole env value"),
    (_set(["env", "DB_URL"], "mysql://${db_host"), "env.DB_URL: has a '${' without its '}' (write $$ for a literal $)"),
    (_set(["scenarios"], []), "scenarios: is empty; allowed: a non-empty list of the scenarios the app serves"),
    (_set(["scenarios"], ["greeting", "greeting"]), "scenarios: lists an entry more than once; allowed: a non-empty list"),
    (_set(["scenarios"], ["greetings"]), "scenarios[0]: 'greetings' is not a scenario; allowed: one of " + ", ".join(SCENARIOS)
     + ", or the path of a scenario file relative to the manifest (.yml or .yaml)"),
    (_set(["scenarios"], ["own/scenario.yml"]), "scenarios[0]: 'own/scenario.yml' is not a file (a scenario file's path is "
                                                "relative to the manifest"),
    (_set(["database"], {"name": "shop", "seed": "d.sql"}), "database.schema: missing; allowed: the SQL file that creates its tables"),
    (_set(["database"], {"name": "perflab", "schema": "s.sql", "seed": "d.sql"}),
     "database.name: 'perflab' is not allowed; allowed: the database's name: lower-case letters, digits and _"),
    (_set(["database"], {"name": "Shop", "schema": "s.sql", "seed": "d.sql"}), "database.name: 'Shop' is not allowed"),
    (_set(["database"], {"name": "shop", "schema": "${1X}/s.sql", "seed": "d.sql"}),
     "database.schema: ${1X} is not ${VAR} or ${VAR:-default}"),
    (_set(["variants", "Threads"], {"default": "a", "options": {"a": {}}}), "variants.Threads: 'Threads' is not allowed as a name here"),
    (_without(["variants", "threads", "default"]), "variants.threads.default: missing; allowed: the option used when none is chosen"),
    (_set(["variants", "threads", "default"], "green"), "variants.threads.default: 'green' is not one of its options; allowed: one of platform, virtual"),
    (_set(["variants", "threads", "options"], {}), "variants.threads.options: is empty; allowed: a non-empty mapping of option names"),
    (_set(["variants", "threads", "options", 400], {}), "variants.threads.options.400: 400 is not allowed as a name here; allowed: an option's name"),
    (_set(["variants", "threads", "options", "virtual", "envs"], {}), "variants.threads.options.virtual.envs: unknown field; the fields here are env, jvm_options, args, java"),
    (_set(["variants", "threads", "options", "virtual", "java"], "21"), "variants.threads.options.virtual.java: '21' is a string, not a whole number"),
    (_set(["variants", "threads", "options", "virtual", "env"], {"T": "${nope}"}), "variants.threads.options.virtual.env.T: ${nope} is not a lab variable"),
]


@pytest.mark.parametrize(("change", "message"), BAD_FIELDS, ids=[m.split(":")[0] for _, m in BAD_FIELDS])
def test_every_wrong_field_is_one_message_with_the_file_the_field_and_what_is_allowed(
        tmp_path: Path, change: Any, message: str) -> None:
    document = valid()
    change(document)
    found = problems(tmp_path, document)
    assert len(found) == 1, found
    assert found[0].startswith(f"{tmp_path / 'demo.yml'}: "), found
    assert message in found[0], found


def test_several_wrong_fields_are_one_message_each(tmp_path: Path) -> None:
    document = valid()
    document["port"] = 0
    document["readiness"]["status"] = "ok"
    document["extra"] = 1
    found = problems(tmp_path, document)
    assert [line.split(": ")[1] for line in found] == ["extra", "port", "readiness.status"], found


@pytest.mark.parametrize(("text", "message"), [
    ("name: demo\nport: 8080\nport: 8081\n", "not valid YAML at line 3: 'port' is given twice: give each field once"),
    ("name: [demo\n", "not valid YAML at line 2"),
    ("- name: demo\n", "not a mapping of fields but a list"),
    ("", "not a mapping of fields but empty"),
])
def test_a_file_that_is_not_a_mapping_of_fields_is_one_message(tmp_path: Path, text: str, message: str) -> None:
    found = problems(tmp_path, text)
    assert len(found) == 1 and message in found[0], found


def test_a_manifest_under_apps_is_named_after_its_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifest, "APPS_DIR", tmp_path)
    monkeypatch.setattr(manifest, "PEERS_DIR", tmp_path / "peers")
    (tmp_path / "peers").mkdir()
    document = valid()
    write(tmp_path / "peers", document, "tfb-demo.yml")
    (tmp_path / "demo").mkdir()
    write(tmp_path / "demo", document, "perflab-app.yml")
    assert manifest.load(tmp_path / "demo" / "perflab-app.yml").builtin
    with pytest.raises(ManifestError) as refused:
        manifest.resolve("tfb-demo")
    assert refused.value.problems == (f"{tmp_path / 'peers' / 'tfb-demo.yml'}: name: 'demo' is not the name its place gives "
                                      "it, 'tfb-demo': a manifest under apps/ is named after its place (apps/<name>/perflab-app.yml, "
                                      "apps/peers/<name>.yml); rename one of them",)
    assert list(manifest.known()) == ["demo", "tfb-demo"]


# ---------------------------------------------------------------------------------------------
# Finding an app


def test_an_unknown_app_is_one_line_listing_the_known_ones() -> None:
    with pytest.raises(ManifestError) as refused:
        manifest.resolve("tomcat")
    assert refused.value.problems == (f"unknown app 'tomcat': the known apps are {KNOWN} (APP= takes one of them or the "
                                      "path of a manifest file)",)
    with pytest.raises(ManifestError, match="^no app given: the known apps are petclinic, quarkus"):
        manifest.resolve("")
    with pytest.raises(ManifestError, match="^no manifest at apps/peers/nope.yml: APP= takes a manifest's name"):
        manifest.resolve("apps/peers/nope.yml")


def test_an_app_is_found_by_name_or_by_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert manifest.resolve("apps/quarkus/perflab-app.yml") == manifest.resolve("quarkus")
    assert manifest.resolve(str(ROOT / "apps" / "quarkus" / "perflab-app.yml")).name == "quarkus"
    file = write(tmp_path, valid(), "mine.yml")
    monkeypatch.chdir(tmp_path)
    assert manifest.resolve("mine.yml").file == file and manifest.resolve("./mine.yml").name == "demo"


# ---------------------------------------------------------------------------------------------
# Variants


def test_variants_take_their_default_unless_chosen() -> None:
    mvc = manifest.resolve("spring-mvc")
    on = {"observability": "on"}
    assert manifest.choose(mvc, []) == {"threads": "platform", "max_threads": "200"} | on
    assert manifest.choose(mvc, ["threads=virtual", "max_threads=400"]) == {"threads": "virtual", "max_threads": "400"} | on
    assert manifest.choose(mvc, ["virtual"]) == {"threads": "virtual", "max_threads": "200"} | on  # contract's spring-mvc+virtual
    assert manifest.choose(manifest.resolve("quarkus"), manifest.variant_selections(" dispatch=worker ")) == {
        "dispatch": "worker"} | on
    assert manifest.choose(manifest.resolve("spring-webflux"), ["off"]) == {"observability": "off"}
    assert manifest.choose(manifest.resolve("tfb-spring"), []) == {}


@pytest.mark.parametrize(("app", "selections", "message"), [
    ("quarkus", ["threads=virtual"],
     "quarkus has no variant 'threads': its variants are dispatch: io|worker; observability: on|off"),
    ("spring-webflux", ["dispatch=worker"], "spring-webflux has no variant 'dispatch': its variants are observability: on|off"),
    ("tfb-spring", ["dispatch=worker"], "tfb-spring has no variant 'dispatch': its variants are none"),
    ("quarkus", ["dispatch=eventloop"], "quarkus: variant dispatch has no option 'eventloop': use one of io, worker"),
    ("spring-mvc", ["green"], "spring-mvc: variant option 'green' is unknown; give key=value: the variants are "
                              "threads: platform|virtual; max_threads: 200|400; observability: on|off"),
])
def test_a_variant_the_app_does_not_have_is_refused(app: str, selections: list[str], message: str) -> None:
    with pytest.raises(ManifestError) as refused:
        manifest.choose(manifest.resolve(app), selections)
    assert refused.value.problems == (message,)


def test_make_compare_applies_a_variant_to_the_apps_that_have_it() -> None:
    assert manifest.choose(manifest.resolve("quarkus"), ["threads=virtual", "virtual"], strict=False) == {
        "dispatch": "io", "observability": "on"}
    with pytest.raises(ManifestError, match="has no option 'fibre'"):
        manifest.choose(manifest.resolve("spring-mvc"), ["threads=fibre"], strict=False)


# ---------------------------------------------------------------------------------------------
# The deployment of the built-in apps: what role app deployed before manifests


@pytest.mark.parametrize(("app", "selections", "before"), [
    ("quarkus", [], role_env_before_manifests()),
    ("quarkus", ["dispatch=worker"], role_env_before_manifests(dispatch="worker")),
    ("spring-webflux", [], role_env_before_manifests()),
    ("spring-mvc", [], role_env_before_manifests()),
    ("spring-mvc", ["threads=virtual"], role_env_before_manifests(threads="virtual")),
    ("spring-mvc", ["max_threads=400"], role_env_before_manifests(max_threads="400")),
])
def test_the_builtin_apps_deploy_as_the_role_did_before_manifests(app: str, selections: list[str], before: dict[str, str]) -> None:
    found = manifest.resolve(app)
    deployed = manifest.deploy_vars(found, manifest.choose(found, selections), LAB)
    # The same environment, in the same order, but for the settings this app never reads (the role
    # gave every app every PERFLAB_* variable): each left out is absent from the app's sources.
    left_out = [name for name in before if name not in deployed["env"]]
    # And the settings added since: the db host's engine, to the apps that speak more than one (Quarkus as its
    # runtime profile), and the lab's instrumentation (the variant observability, issue 23).
    added = ({"PERFLAB_DB_ENGINE": LAB["db_engine"]} if app.startswith("spring") else {"QUARKUS_PROFILE": LAB["db_engine"]}) | {
        "PERFLAB_OBSERVABILITY": "on"}
    assert deployed["env"] == {name: value for name, value in before.items() if name not in left_out} | added
    sources = app_sources(app)
    assert all(name not in sources for name in left_out), left_out
    assert set(left_out) == {"quarkus": {"PERFLAB_THREADS", "PERFLAB_MAX_THREADS"},
                             "spring-mvc": {"PERFLAB_GREETING_DISPATCH"},
                             "spring-webflux": {"PERFLAB_GREETING_DISPATCH", "PERFLAB_THREADS", "PERFLAB_MAX_THREADS"}}[app]
    # The password as before: the env file's last line, from the controller's secret, never in the record.
    assert deployed["password_env"] == ["PERFLAB_DB_PASSWORD"] and not deployed["password_file"]
    # The same jar (/opt/perflab/app/perflab-<app>.jar), no JVM option or argument of its own: the
    # unit's are the profile's alone, as before.
    assert deployed["artifact"] == {"path": str(ROOT / "apps" / app / "target" / f"perflab-{app}.jar"), "kind": "jar",
                                    "name": f"perflab-{app}.jar"}
    assert deployed["launch"] == {"jar": f"perflab-{app}.jar", "jvm_options": [], "args": []}
    # The same endpoints: port 8080, ready on /health/ready answering 200, scraped on /metrics.
    assert (deployed["port"], deployed["readiness"], deployed["metrics"]) == (
        8080, {"path": "/health/ready", "status": 200}, {"path": "/metrics"})
    assert deployed["java"] == (21 if "threads=virtual" in selections else 17)
    assert deployed["manifest"] == f"apps/{app}/perflab-app.yml" and deployed["builtin"]


def test_a_foreign_app_is_pointed_at_the_labs_database_and_port(tmp_path: Path) -> None:
    """TechEmpower's Quarkus as a foreign app: a quarkus-app/ directory, other variable names, no metrics."""
    (tmp_path / "quarkus-app").mkdir()
    (tmp_path / "quarkus-app" / "quarkus-run.jar").write_bytes(b"PK")
    document = {
        "name": "tfb-quarkus", "java": 21,
        "artifact": {"dir": "${TFB_DIR:-" + str(tmp_path) + "}", "path": "quarkus-app",
                     "build": {"command": ["mvn", "-DskipTests", "package"], "env": {"MAVEN_OPTS": "-Dnet.bytebuddy.experimental=true"}}},
        "launch": {"jar": "quarkus-run.jar", "jvm_options": ["-Dquarkus.http.port=${http_port}"], "args": ["$$HOME"]},
        "port": 8080, "readiness": {"path": "/plaintext"},
        "env": {"QUARKUS_DATASOURCE_REACTIVE_URL": "mysql://${db_host}:${db_port}/${db_name}",
                "QUARKUS_DATASOURCE_USERNAME": "${db_user}", "QUARKUS_DATASOURCE_PASSWORD": "${db_password}",
                "PASSWORD_FILE": "${db_password_file}", "COST": "$$5"},
        "scenarios": ["plaintext-json"],
    }
    found = manifest.load(write(tmp_path, document, "tfb-quarkus.yml"))
    deployed = manifest.deploy_vars(found, manifest.choose(found, []), LAB)
    assert deployed["artifact"] == {"path": str(tmp_path / "quarkus-app"), "kind": "directory", "name": "quarkus-app"}
    assert deployed["launch"] == {"jar": "quarkus-app/quarkus-run.jar", "jvm_options": ["-Dquarkus.http.port=8080"], "args": ["$HOME"]}
    assert deployed["metrics"] is None and deployed["readiness"] == {"path": "/plaintext", "status": 200}
    assert deployed["env"] == {"QUARKUS_DATASOURCE_REACTIVE_URL": "mysql://db.example:3306/perflab", "QUARKUS_DATASOURCE_USERNAME": "perflab",
                               "PASSWORD_FILE": "/etc/perflab/db-password", "COST": "$5"}
    assert deployed["password_env"] == ["QUARKUS_DATASOURCE_PASSWORD"] and deployed["password_file"]
    assert app_build.artifact_problem(found, Path(deployed["artifact"]["path"])) is None
    moved = manifest.deploy_vars(found, {}, LAB, port=18080)
    assert moved["port"] == 18080 and moved["launch"]["jvm_options"] == ["-Dquarkus.http.port=18080"]
    # Without a lab value a variable stays visible as it is written (perflab app show without --lab).
    assert manifest.deploy_vars(found, {}, {})["env"]["QUARKUS_DATASOURCE_USERNAME"] == "${db_user}"


def test_an_app_that_is_not_told_its_port_cannot_be_moved(tmp_path: Path) -> None:
    document = valid()
    document["launch"]["args"] = []
    found = manifest.load(write(tmp_path, document))
    with pytest.raises(ManifestError, match=r"demo listens on port 8080: its manifest passes no \$\{http_port\}"):
        manifest.deploy_vars(found, {}, LAB, port=9090)
    with pytest.raises(ManifestError, match="unknown lab variable"):
        manifest.deploy_vars(found, {}, {"db_hots": "x"})


# ---------------------------------------------------------------------------------------------
# Building and packing the artifact


def builder(tmp_path: Path, **artifact: Any) -> Manifest:
    """A manifest whose build writes target/app.jar with this Python and counts its runs in builds.log."""
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "Main.java").write_text("class Main {}")
    script = ("import os, pathlib; pathlib.Path('target').mkdir(exist_ok=True); pathlib.Path('target/app.jar').write_text('jar');"
              "open('builds.log', 'a').write(os.environ['WHO'] + '\\n')")
    document = valid()
    document["artifact"] = {"path": "target/app.jar",
                            "build": {"command": [sys.executable, "-c", script], "env": {"WHO": "${WHO:-built}"}, "sources": ["src"]},
                            **artifact}
    return manifest.load(write(tmp_path, document))


def builds(tmp_path: Path) -> list[str]:
    log = tmp_path / "builds.log"
    return log.read_text().split() if log.exists() else []


def test_the_build_runs_when_the_artifact_is_missing_or_older_than_its_sources(tmp_path: Path) -> None:
    found, said = builder(tmp_path), list[str]()
    assert app_build.build(found, said.append) == tmp_path / "target" / "app.jar"
    assert builds(tmp_path) == ["built"] and said[0].startswith("perflab app: building demo (") and "app.jar is missing)" in said[0]
    app_build.build(found, said.append)
    assert builds(tmp_path) == ["built"], "an artifact newer than its sources is not rebuilt"
    past = time.time() - 60
    os.utime(tmp_path / "target" / "app.jar", (past, past))
    app_build.build(found, said.append)
    assert builds(tmp_path) == ["built", "built"] and "is older than its sources" in said[-1]


def test_the_build_reads_the_controllers_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WHO", "me")
    app_build.build(builder(tmp_path), lambda _: None)
    assert builds(tmp_path) == ["me"]
    found = builder(tmp_path, dir="${APP_HOME}")
    monkeypatch.delenv("APP_HOME", raising=False)
    with pytest.raises(ManifestError, match=r"demo.yml: artifact.dir: \$\{APP_HOME\} is not set in the environment: set it "
                                            r"\(e.g. make deploy APP_HOME=...\) or give a default, \$\{APP_HOME:-...\}"):
        manifest.artifact_path(found)


def test_a_failing_build_or_a_missing_artifact_is_one_clear_message(tmp_path: Path) -> None:
    document = valid()
    document["artifact"] = {"path": "target/app.jar", "build": {"command": [sys.executable, "-c", "raise SystemExit(3)"]}}
    with pytest.raises(app_build.BuildError, match=r"^demo: the build failed \(exit 3\): "):
        app_build.build(manifest.load(write(tmp_path, document)), lambda _: None)
    document["artifact"]["build"]["command"] = ["true"]
    with pytest.raises(app_build.BuildError, match=r"^demo: the jar .*target/app.jar does not exist after its build: check "
                                                  r"artifact.path and launch.jar in "):
        app_build.build(manifest.load(write(tmp_path, document)), lambda _: None)
    document["artifact"] = {"path": "target"}
    (tmp_path / "target").mkdir()
    with pytest.raises(app_build.BuildError, match=r"does not exist \(it is a directory: name the jar in it in launch.jar\) and its "
                                                  r"manifest has no build: build it, or fix artifact.path in "):
        app_build.build(manifest.load(write(tmp_path, document)), lambda _: None)
    document["launch"] = {"jar": "run.jar"}
    with pytest.raises(app_build.BuildError, match="launch.jar 'run.jar' is not a file in"):
        app_build.build(manifest.load(write(tmp_path, document)), lambda _: None)


def test_a_directory_is_packed_into_the_same_bytes_until_its_content_changes(tmp_path: Path) -> None:
    app = tmp_path / "build" / "quarkus-app"
    (app / "lib").mkdir(parents=True)
    (app / "quarkus-run.jar").write_text("run")
    (app / "lib" / "a.jar").write_text("a")
    document = valid()
    document["artifact"] = {"path": "build/quarkus-app"}
    document["launch"] = {"jar": "quarkus-run.jar"}
    found = manifest.load(write(tmp_path, document))
    tar = tmp_path / "out" / "demo.tar"
    assert app_build.pack(found, tar)
    first = tar.read_bytes()
    time.sleep(0.01)
    (app / "lib" / "a.jar").write_text("a")  # rewritten by a build, same content: same tar
    assert not app_build.pack(found, tar) and tar.read_bytes() == first
    with tarfile.open(tar) as packed:
        assert packed.getnames() == ["quarkus-app", "quarkus-app/quarkus-run.jar", "quarkus-app/lib", "quarkus-app/lib/a.jar"]
        assert {m.mtime for m in packed.getmembers()} == {0}
    (app / "lib" / "b.jar").write_text("b")
    assert app_build.pack(found, tar) and tar.read_bytes() != first
    assert [p.name for p in tar.parent.iterdir()] == ["demo.tar"]


# ---------------------------------------------------------------------------------------------
# The command line, as Make and role app call it


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["app", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cli_lists_shows_and_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "list", "--names", "--builtin") == (0, "quarkus\nspring-mvc\nspring-webflux\n", "")
    assert run_cli(capsys, "list", "--names", "--scenario", "plaintext-json")[1].split() == [*BUILTIN, *FOREIGN]
    assert run_cli(capsys, "list", "--names", "--scenario", "zipcodes")[1].split() == list(BUILTIN)
    code, out, _ = run_cli(capsys, "show", "spring-mvc", "--json", "--variant", "threads=virtual max_threads=400",
                           *(f"--lab={k}={v}" for k, v in LAB.items()))
    shown = json.loads(out)
    assert code == 0 and shown["variants"] == {"threads": "virtual", "max_threads": "400", "observability": "on"}
    assert shown["env"] == {k: v for k, v in role_env_before_manifests(threads="virtual", max_threads="400").items()
                            if k != "PERFLAB_GREETING_DISPATCH"} | {"PERFLAB_DB_ENGINE": "mariadb", "PERFLAB_OBSERVABILITY": "on"}
    assert run_cli(capsys, "show", "tomcat") == (2, "", f"perflab app: unknown app 'tomcat': the known apps are {KNOWN} (APP= "
                                                        "takes one of them or the path of a manifest file)\n")
    code, _, err = run_cli(capsys, "show", "quarkus", "--variant", "threads=virtual")
    assert (code, err) == (2, "perflab app: quarkus has no variant 'threads': its variants are dispatch: io|worker; "
                           "observability: on|off\n")


def test_the_cli_refuses_an_app_that_does_not_claim_the_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = write(tmp_path, valid())
    code, _, err = run_cli(capsys, "show", str(file), "--scenario", "zipcodes")
    assert (code, err) == (2, f"perflab app: demo does not claim scenario 'zipcodes': it claims greeting ({file}, scenarios)\n")
    # An unknown scenario is the loadgen role's to refuse, with its own message.
    assert run_cli(capsys, "show", str(file), "--scenario", "nosuch")[0] == 0


def test_the_cli_build_says_what_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = valid()
    del document["artifact"]["build"]
    code, _, err = run_cli(capsys, "build", str(write(tmp_path, document)))
    assert code == 1 and re.fullmatch(r"perflab app: demo: the jar \S+target/demo.jar does not exist and its manifest has no "
                                      r"build: build it, or fix artifact.path in \S+demo.yml\n", err), err
    document["port"] = "http"
    code, _, err = run_cli(capsys, "build", str(write(tmp_path, document)))
    assert code == 2 and err.count("\n") == 1 and "port: 'http' is a string, not a whole number" in err


def test_the_manifests_of_the_repository_keep_to_the_schema_file_they_name() -> None:
    for file in manifest.known().values():
        assert "$schema=../../perflab/app-manifest.schema.json" in file.read_text()
        assert (file.parent / "../../perflab/app-manifest.schema.json").resolve() == manifest.SCHEMA_FILE
        document = yaml.safe_load(file.read_text())
        jsonschema.Draft202012Validator(manifest.schema()).validate(copy.deepcopy(document))


def test_the_readmes_example_manifest_is_valid(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### Your own app: a manifest"):]
    example = section[section.index("```yaml\n") + len("```yaml\n"):section.index("\n```", section.index("```yaml"))]
    found = manifest.load(write(tmp_path, example + "\n", "orders.yml"))
    assert found.name == "orders" and found.launch.jvm_options == ("-XX:+UseSerialGC",)
    deployed = manifest.deploy_vars(found, manifest.choose(found, ["gc=parallel"]), LAB)
    assert deployed["env"]["SPRING_DATASOURCE_URL"] == (
        "jdbc:mariadb://db.example:3306/perflab?sslMode=verify-ca&serverSslCert=/etc/perflab/db-ca.crt")
    assert deployed["launch"]["jvm_options"] == ["-XX:+UseSerialGC", "-XX:+UseParallelGC"]
    assert deployed["password_env"] == ["SPRING_DATASOURCE_PASSWORD"] and deployed["env"]["SERVER_PORT"] == "8080"


def test_make_compare_runs_every_app_claiming_the_scenario_each_with_its_variants(monkeypatch: pytest.MonkeyPatch) -> None:
    # Which apps and variants a comparison takes, and that each is built before it runs; the build
    # itself (Maven, minutes on a clean clone) is the build tests' above and the lab's.
    built: list[str] = []

    def build(found: Manifest) -> Path:
        built.append(found.name)
        return manifest.artifact_path(found)

    monkeypatch.setattr(app_build, "build", build)

    def chosen(given: str, scenario: str, selections: list[str]) -> list[tuple[str, str]]:
        built.clear()
        apps = [(app.given, app.variants) for app in compare.select_apps(given, scenario, selections)]
        assert built == [name for name, _ in apps]
        return apps

    assert chosen("", "zipcodes", ["threads=virtual"]) == [
        ("quarkus", "dispatch=io observability=on"), ("spring-mvc", "threads=virtual max_threads=200 observability=on"),
        ("spring-webflux", "observability=on")]
    assert chosen("spring-webflux quarkus", "greeting", ["worker"]) == [
        ("spring-webflux", "observability=on"), ("quarkus", "dispatch=worker observability=on")]
    built.clear()
    with pytest.raises(ManifestError, match=r"no app of this comparison \(quarkus, spring-mvc, spring-webflux\) has the variant 'gc=g1'"):
        compare.select_apps("", "zipcodes", ["gc=g1"])
    assert built == [], "an app was built for a comparison that was refused"


def test_an_app_with_its_own_database_and_scenario_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spring PetClinic's shape: its own database from its own SQL files (${db_name} is its name), and a
    scenario file of its own that it claims by its path; the lab's built-ins stay claimed by name."""
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "schema.sql").write_text("CREATE TABLE IF NOT EXISTS owners (id INT PRIMARY KEY);\n")
    (tmp_path / "db" / "data.sql").write_text("INSERT IGNORE INTO owners VALUES (1);\n")
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "scenario.yml").write_text("name: shop\n")
    document = valid() | {
        "env": {"URL": "jdbc:mysql://${db_host}:${db_port}/${db_name}?sslMode=REQUIRED", "PW": "${db_password}"},
        "database": {"name": "shop", "schema": "${SHOP_DIR:-db}/schema.sql", "seed": "db/data.sql"},
        "scenarios": ["shop/scenario.yml", "greeting"],
    }
    found = manifest.load(write(tmp_path, document))
    assert found.database == manifest.Database("shop", "${SHOP_DIR:-db}/schema.sql", "db/data.sql")
    deployed = manifest.deploy_vars(found, manifest.choose(found, []), LAB)
    assert deployed["env"]["URL"] == "jdbc:mysql://db.example:3306/shop?sslMode=REQUIRED"
    assert deployed["database"] == {"name": "shop", "schema": str(tmp_path / "db" / "schema.sql"),
                                    "seed": str(tmp_path / "db" / "data.sql")}
    monkeypatch.chdir(tmp_path)
    assert manifest.claims(found, "shop/scenario.yml") and manifest.claims(found, str(tmp_path / "shop" / "scenario.yml"))
    assert manifest.claims(found, "greeting") and not manifest.claims(found, "zipcodes")
    assert not manifest.claims(found, "other/scenario.yml")
    # A schema that is not there is one line, when the lab would copy it.
    monkeypatch.setenv("SHOP_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(ManifestError) as refused:
        manifest.deploy_vars(found, {}, LAB)
    assert refused.value.problems == (f"{manifest.shown(found.file)}: database.schema: nowhere/schema.sql is not a file",)
    # An app without a database of its own uses the lab's.
    assert manifest.deploy_vars(manifest.load(write(tmp_path, valid(), "plain.yml")), {}, LAB)["database"] is None


def test_petclinic_brings_its_own_database_and_workload() -> None:
    found = manifest.resolve("petclinic")
    assert not found.builtin and found.database is not None and found.database.name == "petclinic"
    assert found.scenarios == ("petclinic/scenario.yml",)
    assert manifest.claims(found, str(ROOT / "apps" / "peers" / "petclinic" / "scenario.yml"))
    deployed = manifest.deploy_vars(found, {}, LAB)
    assert deployed["env"]["MYSQL_URL"] == "jdbc:mysql://db.example:3306/petclinic?sslMode=REQUIRED"
    assert deployed["password_env"] == ["MYSQL_PASS"]
    assert Path(deployed["database"]["schema"]).name == "schema.sql" and Path(deployed["database"]["seed"]).name == "data.sql"


def test_db_engines_says_which_lab_db_engine_an_app_speaks(tmp_path: Path) -> None:
    """By default the MySQL protocol's engines (every app of the lab today); a manifest may name PostgreSQL,
    and the bench and make deploy refuse an app whose list lacks the db host's lab_db_engine."""
    assert manifest.load(write(tmp_path, valid())).db_engines == ("mariadb", "mysql")
    assert manifest.deploy_vars(manifest.load(write(tmp_path, valid())), {}, LAB)["db_engines"] == ["mariadb", "mysql"]
    found = manifest.load(write(tmp_path, valid() | {"db_engines": ["postgresql"]}, "pg.yml"))
    assert found.db_engines == ("postgresql",)
    assert any("db_engines" in line and "oracle" in line for line in problems(tmp_path, valid() | {"db_engines": ["oracle"]}))
    assert any("db_engines" in line for line in problems(tmp_path, valid() | {"db_engines": []}))
    assert manifest.resolve("petclinic").db_engines == ("mariadb", "mysql")
    assert all(manifest.resolve(name).db_engines == ("mariadb", "mysql", "postgresql")
               for name in ("quarkus", "spring-mvc", "spring-webflux"))
    # The lab gives its db host's engine (role app, the bench's checks, make deploy): one the app lacks is one line.
    assert manifest.deploy_vars(found, {}, LAB | {"db_engine": "postgresql"})["db_engines"] == ["postgresql"]
    mysql_only = manifest.load(write(tmp_path, valid(), "mysql-only.yml"))
    with pytest.raises(ManifestError) as refused:
        manifest.deploy_vars(mysql_only, manifest.choose(mysql_only, []), LAB | {"db_engine": "postgresql"})
    assert refused.value.problems == (f"demo speaks mariadb, mysql ({tmp_path}/mysql-only.yml: db_engines), and the lab's "
                                      "db host runs postgresql (lab_db_engine)",)


def test_an_app_built_per_engine_deploys_the_engines_artifact_and_builds_them_all(tmp_path: Path) -> None:
    """Quarkus fixes its database kind when it builds: its manifest names a second jar for PostgreSQL."""
    quarkus = manifest.resolve("quarkus")
    on = {engine: manifest.deploy_vars(quarkus, {}, LAB | {"db_engine": engine}) for engine in ("mariadb", "postgresql")}
    assert on["mariadb"]["artifact"]["name"] == "perflab-quarkus.jar" and on["mariadb"]["env"]["QUARKUS_PROFILE"] == "mariadb"
    assert on["postgresql"]["artifact"] == {"path": str(ROOT / "apps/quarkus/target/perflab-quarkus-postgresql.jar"),
                                            "kind": "jar", "name": "perflab-quarkus-postgresql.jar"}
    assert on["postgresql"]["launch"]["jar"] == "perflab-quarkus-postgresql.jar"
    # The build makes both: one missing, or older than the sources, is a reason to build.
    found = builder(tmp_path, by_db_engine={"mysql": "target/app-pg.jar"})
    assert manifest.artifact_paths(found) == [tmp_path / "target" / "app.jar", tmp_path / "target" / "app-pg.jar"]
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "app.jar").write_text("jar")
    assert app_build.build_reason(found) == f"{tmp_path}/target/app-pg.jar is missing"
    (tmp_path / "target" / "app-pg.jar").write_text("jar")
    assert app_build.build_reason(found) is None
    past = time.time() - 60
    os.utime(tmp_path / "target" / "app-pg.jar", (past, past))
    assert app_build.build_reason(found) == f"{tmp_path}/target/app-pg.jar is older than its sources"
    # An engine the app does not speak is no place for an artifact.
    document = valid() | {"db_engines": ["mariadb"]}
    document["artifact"] = dict(document["artifact"], by_db_engine={"postgresql": "target/pg.jar"})
    assert problems(tmp_path, document) == (f"{tmp_path}/demo.yml: artifact.by_db_engine.postgresql: the app does not speak "
                                            "postgresql (db_engines: mariadb); allowed: one of its db_engines",)
    document["artifact"] = dict(document["artifact"], by_db_engine={"oracle": "target/pg.jar"})
    assert any("artifact.by_db_engine" in line for line in problems(tmp_path, document))
    # A directory artifact is packed from artifact.path: an engine's own is refused rather than never deployed.
    document = valid()
    document["artifact"] = dict(document["artifact"], by_db_engine={"mysql": "target/other"})
    document["launch"] = dict(document["launch"], jar="app.jar")
    assert problems(tmp_path, document) == (f"{tmp_path}/demo.yml: artifact.by_db_engine: names jars only: with launch.jar "
                                            "(a directory artifact) there is one directory for every engine",)
