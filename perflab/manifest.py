"""App manifests: everything the lab needs to build, deploy and measure one app under test.

One small YAML file per app, validated against perflab/app-manifest.schema.json (which says what
each field allows) and then against the lab (its scenarios, its variables): apps/<name>/perflab-app.yml
for the project's own apps (built-in), apps/peers/<name>.yml for apps it did not write (foreign),
or any file given by its path. A wrong manifest is refused with one line per wrong field: the
file, the field, what is wrong and what the field allows.

    name: quarkus
    artifact:                       # a jar, or a directory holding one (launch.jar names it)
      path: target/perflab-quarkus.jar
      build: {command: [mvn, -B, -q, package, -DskipTests], sources: [../pom.xml, pom.xml, src]}
    launch: {jvm_options: [], args: []}
    port: 8080
    readiness: {path: /health/ready, status: 200}
    metrics: {path: /metrics}       # optional: without it the app is not scraped
    env: {PERFLAB_HTTP_PORT: "${http_port}", PERFLAB_DB_HOST: "${db_host}", PERFLAB_DB_PASSWORD: "${db_password}"}
    scenarios: [greeting, zipcodes]
    variants:
      dispatch:
        default: io
        options: {io: {env: {PERFLAB_GREETING_DISPATCH: io}}, worker: {env: {PERFLAB_GREETING_DISPATCH: worker}}}

Two kinds of ${...}: in `env` and `launch` (and a variant's options) they are the lab's variables
(LAB_VARIABLES), filled in when the app is deployed, so that an app with other variable names or
written for another database is pointed at the lab's; ${db_password} only as a whole env value,
so that the password stays in the app's 0600 environment file. In `artifact` they read the
controller's environment, ${VAR} or ${VAR:-default} (`make deploy VAR=...` sets one). `$$` is a
literal `$` in both.

Building the artifact is perflab/app_build.py's, the command line (`perflab app ...`)
perflab/app_cli.py's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]

from perflab import strict_yaml
from perflab.scenario import builtin_names
from perflab.scenario import is_file_name as is_scenario_file

ROOT = Path(__file__).resolve().parent.parent
APPS_DIR = ROOT / "apps"
PEERS_DIR = APPS_DIR / "peers"
MANIFEST_FILE = "perflab-app.yml"
SCHEMA_FILE = Path(__file__).resolve().with_name("app-manifest.schema.json")

# The lab's variables a manifest's env and launch may use, with what role `app` gives them.
LAB_VARIABLES = {
    "http_port": "the port the app listens on (the manifest's port)",
    "db_host": "the database's address",
    "db_port": "the database's port",
    "db_name": "the database's name",
    "db_user": "the apps' database user",
    "db_password": "that user's password (only as a whole env value: it stays in the 0600 environment file)",
    "db_password_file": "a file on the app host holding that password, readable by the app",
    "db_ca_file": "the lab CA (PEM) on the app host, which the database server's certificate is checked against",
    "db_pool_size": "the most database connections the app's pool may open",
    "db_engine": "the db host's engine (its lab_db_engine: mariadb, mysql or postgresql); an app whose db_engines lacks it is refused",
}
PASSWORD = "db_password"
PASSWORD_FILE = "db_password_file"


class ManifestError(strict_yaml.FileRefused):
    """A manifest, or what was asked of it, is refused; one line per problem."""


# ---------------------------------------------------------------------------------------------
# The model: what a valid manifest holds (the schema's fields, test_manifest checks they agree)


@dataclass(frozen=True)
class Build:
    command: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class Artifact:
    path: str
    dir: str = "."
    build: Build | None = None
    by_db_engine: dict[str, str] = field(default_factory=dict)  # lab_db_engine -> its path where it is not `path`


@dataclass(frozen=True)
class Launch:
    jar: str | None = None
    jvm_options: tuple[str, ...] = ()
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Readiness:
    path: str
    status: int = 200


@dataclass(frozen=True)
class Metrics:
    path: str


@dataclass(frozen=True)
class Option:
    env: dict[str, str] = field(default_factory=dict)
    jvm_options: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    java: int | None = None


@dataclass(frozen=True)
class Database:
    """The app's own database on the lab's DB host: its name, and the SQL files that create and fill it."""
    name: str
    schema: str
    seed: str


@dataclass(frozen=True)
class Variant:
    default: str
    options: dict[str, Option]
    description: str = ""


# The lab_db_engine values an app speaks unless its manifest's db_engines says otherwise: the MySQL protocol's.
DB_ENGINES = ("mariadb", "mysql")


@dataclass(frozen=True)
class Manifest:
    name: str
    artifact: Artifact
    port: int
    readiness: Readiness
    scenarios: tuple[str, ...]
    file: Path  # where it was read from: not a field of the file
    description: str = ""
    java: int = 17
    launch: Launch = Launch()
    metrics: Metrics | None = None
    env: dict[str, str] = field(default_factory=dict)
    variants: dict[str, Variant] = field(default_factory=dict)
    counterpart: str | None = None  # the project's app this foreign one does the same work as
    database: Database | None = None  # its own database, instead of the lab's
    db_engines: tuple[str, ...] = DB_ENGINES  # the lab_db_engine values it speaks

    @property
    def builtin(self) -> bool:
        """One of the project's own apps: apps/<name>/perflab-app.yml."""
        return self.file.name == MANIFEST_FILE and self.file.parent.parent == APPS_DIR


def _from_document(data: dict[str, Any], file: Path) -> Manifest:
    """A Manifest from a document the schema accepted."""
    artifact, launch = data["artifact"], data.get("launch", {})
    build = artifact.get("build")

    def option(o: dict[str, Any]) -> Option:
        return Option(dict(o.get("env", {})), tuple(o.get("jvm_options", ())), tuple(o.get("args", ())), o.get("java"))

    return Manifest(
        name=data["name"],
        artifact=Artifact(artifact["path"], artifact.get("dir", "."), None if build is None else Build(
            tuple(build["command"]), dict(build.get("env", {})), tuple(build.get("sources", ()))),
            dict(artifact.get("by_db_engine", {}))),
        port=data["port"],
        readiness=Readiness(data["readiness"]["path"], data["readiness"].get("status", 200)),
        scenarios=tuple(data["scenarios"]),
        file=file,
        description=data.get("description", ""),
        java=data.get("java", 17),
        launch=Launch(launch.get("jar"), tuple(launch.get("jvm_options", ())), tuple(launch.get("args", ()))),
        metrics=Metrics(data["metrics"]["path"]) if "metrics" in data else None,
        env=dict(data.get("env", {})),
        variants={name: Variant(v["default"], {o: option(spec) for o, spec in v["options"].items()},
                                v.get("description", ""))
                  for name, v in data.get("variants", {}).items()},
        counterpart=data.get("counterpart"),
        database=Database(**data["database"]) if "database" in data else None,
        db_engines=tuple(data.get("db_engines", DB_ENGINES)),
    )


# ---------------------------------------------------------------------------------------------
# Reading and checking a manifest


def shown(path: Path) -> str:
    """A path as messages show it: relative to the working directory where it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def schema() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return document


def _field(path: Sequence[Any]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(the file)"


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    return {str: "a string", int: "a number", float: "a number", list: "a list", dict: "a mapping",
            type(None): "empty"}.get(type(value), type(value).__name__)


_TYPES = {"string": "a string", "integer": "a whole number", "array": "a list", "object": "a mapping"}


def _value(value: Any) -> str:
    return repr(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else _kind(value)


def _resolve_ref(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: dict[str, Any] = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _allowed(root: dict[str, Any], path: Sequence[Any]) -> str:
    """What the field at PATH allows: its description in the schema (the innermost one that has one)."""
    node, description = root, root.get("description", "")
    for part in path:
        node = _resolve_ref(root, node)
        if isinstance(part, int):
            node = node.get("items", {})
        elif part in node.get("properties", {}):
            node = node["properties"][part]
        elif isinstance(node.get("additionalProperties"), dict):
            node = node["additionalProperties"]
        else:
            return str(description)
        description = node.get("description") or _resolve_ref(root, node).get("description", description)
    return str(description)


def _schema_problems(root: dict[str, Any], error: Any) -> Iterator[tuple[str, str]]:
    """(field, what is wrong and what it allows) for one jsonschema error."""
    path, keyword, instance = list(error.absolute_path), error.validator, error.instance
    if "propertyNames" in error.relative_schema_path:
        name = f"{path and _field(path) + '.' or ''}{instance}"
        yield name, f"{_value(instance)} is not allowed as a name here; allowed: {error.schema.get('description', '')}"
        return
    if keyword == "required":
        for missing in error.validator_value:
            if missing not in instance:
                yield _field([*path, missing]), f"missing; allowed: {_allowed(root, [*path, missing])}"
        return
    if keyword == "additionalProperties" and error.validator_value is False:
        known = list(error.schema.get("properties", {}))
        for extra in instance:
            if extra not in known:
                yield _field([*path, extra]), f"unknown field; the fields here are {', '.join(known)}"
        return
    allowed = _allowed(root, path)
    if keyword == "type":
        problem = f"{_value(instance)} is {_kind(instance)}, not {_TYPES.get(error.validator_value, error.validator_value)}"
    elif keyword in ("minItems", "minLength", "minProperties"):
        problem = "is empty"
    elif keyword == "uniqueItems":
        problem = "lists an entry more than once"
    elif keyword in ("minimum", "maximum"):
        problem = f"{instance} is out of range"
    elif keyword == "pattern":
        problem = f"{_value(instance)} is not allowed"
    else:
        problem = str(error.message)
    yield _field(path), f"{problem}; allowed: {allowed}"


def scenario_names() -> list[str]:
    return builtin_names()


_VARIABLE = re.compile(r"\$(\$|\{([^}]*)\}|\{)")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _expand(text: str, value_of: Callable[[str], str]) -> str:
    """TEXT with every ${...} replaced by value_of(what is inside) and $$ by $; ValueError for an unclosed ${."""
    def one(match: re.Match[str]) -> str:
        if match.group(1) == "$":
            return "$"
        if match.group(2) is None:
            raise ValueError("has a '${' without its '}' (write $$ for a literal $)")
        return value_of(match.group(2))
    return _VARIABLE.sub(one, text)


def _lab_variable_problems(text: str, whole_env_value: bool) -> list[str]:
    problems: list[str] = []

    def check(name: str) -> str:
        if name not in LAB_VARIABLES:
            problems.append(f"${{{name}}} is not a lab variable; the lab's variables are "
                            f"{', '.join('${' + v + '}' for v in LAB_VARIABLES)} (write $$ for a literal $)")
        elif name == PASSWORD and not (whole_env_value and text == "${db_password}"):
            problems.append("${db_password} may only be a whole env value (so that the password stays in the app's "
                            "0600 environment file); an app that reads the password from a file gets ${db_password_file}")
        return ""
    try:
        _expand(text, check)
    except ValueError as error:
        problems.append(str(error))
    return problems[:1]


def _environment_problems(text: str) -> list[str]:
    problems: list[str] = []

    def check(expression: str) -> str:
        name = expression.split(":-", 1)[0]
        if not _ENV_NAME.match(name):
            problems.append(f"${{{expression}}} is not ${{VAR}} or ${{VAR:-default}} with VAR an environment variable's name")
        return ""
    try:
        _expand(text, check)
    except ValueError as error:
        problems.append(str(error))
    return problems[:1]


def _place_name(file: Path) -> str | None:
    """The name a manifest's place gives it, when it is in one of the places APP= searches."""
    resolved = file.resolve()
    if resolved.name == MANIFEST_FILE and resolved.parent.parent == APPS_DIR.resolve():
        return resolved.parent.name
    if resolved.parent == PEERS_DIR.resolve() and resolved.suffix == ".yml":
        return resolved.stem
    return None


def _lab_problems(data: dict[str, Any], file: Path) -> Iterator[tuple[str, str]]:
    """What the schema cannot know: the lab's scenarios, variables, variant defaults, the name's place."""
    place = _place_name(file)
    if place is not None and data["name"] != place:
        yield "name", (f"{data['name']!r} is not the name its place gives it, {place!r}: a manifest under apps/ is "
                       "named after its place (apps/<name>/perflab-app.yml, apps/peers/<name>.yml); rename one of them")
    known = scenario_names()
    for index, scenario in enumerate(data["scenarios"]):
        if is_scenario_file(scenario):
            if not (file.parent / scenario).is_file():
                yield f"scenarios[{index}]", (f"{scenario!r} is not a file (a scenario file's path is relative to the "
                                              f"manifest, {shown(file.parent / scenario)})")
        elif scenario not in known:
            yield f"scenarios[{index}]", (f"{scenario!r} is not a scenario; allowed: one of {', '.join(known)}, or the "
                                          "path of a scenario file relative to the manifest (.yml or .yaml)")
    texts: list[tuple[str, str, bool]] = [(f"env.{k}", v, True) for k, v in data.get("env", {}).items()]
    for key in ("jvm_options", "args"):
        texts += [(f"launch.{key}[{i}]", v, False) for i, v in enumerate(data.get("launch", {}).get(key, ()))]
    for name, variant in data.get("variants", {}).items():
        if variant["default"] not in variant["options"]:
            yield f"variants.{name}.default", (f"{variant['default']!r} is not one of its options; allowed: one of "
                                               f"{', '.join(variant['options'])}")
        for option, spec in variant["options"].items():
            where = f"variants.{name}.options.{option}"
            texts += [(f"{where}.env.{k}", v, True) for k, v in spec.get("env", {}).items()]
            for key in ("jvm_options", "args"):
                texts += [(f"{where}.{key}[{i}]", v, False) for i, v in enumerate(spec.get(key, ()))]
    for where, text, whole in texts:
        for problem in _lab_variable_problems(text, whole):
            yield where, problem
    artifact = data["artifact"]
    build = artifact.get("build", {})
    controller = [("artifact.path", artifact["path"]), ("artifact.dir", artifact.get("dir", "."))]
    controller += [(f"artifact.by_db_engine.{k}", v) for k, v in artifact.get("by_db_engine", {}).items()]
    engines = data.get("db_engines", DB_ENGINES)
    if artifact.get("by_db_engine") and "jar" in data.get("launch", {}):
        # perflab app pack packs artifact.path's directory: an engine's own directory would not be the one deployed.
        yield "artifact.by_db_engine", "names jars only: with launch.jar (a directory artifact) there is one directory for every engine"
    for engine in artifact.get("by_db_engine", {}):
        if engine not in engines:
            yield f"artifact.by_db_engine.{engine}", (f"the app does not speak {engine} (db_engines: {', '.join(engines)}); "
                                                      "allowed: one of its db_engines")
    controller += [(f"artifact.build.command[{i}]", v) for i, v in enumerate(build.get("command", ()))]
    controller += [(f"artifact.build.env.{k}", v) for k, v in build.get("env", {}).items()]
    controller += [(f"artifact.build.sources[{i}]", v) for i, v in enumerate(build.get("sources", ()))]
    controller += [(f"database.{k}", data["database"][k]) for k in ("schema", "seed") if "database" in data]
    for where, text in controller:
        for problem in _environment_problems(text):
            yield where, problem


def load(file: Path) -> Manifest:
    """The manifest in FILE; ManifestError with one line per wrong field."""
    where = shown(file)
    data = strict_yaml.read_mapping(file, where, ManifestError, _kind, "perflab/app-manifest.schema.json")
    root = schema()
    problems: dict[str, str] = {}
    for wrong in sorted(jsonschema.Draft202012Validator(root).iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        for name, problem in _schema_problems(root, wrong):
            problems.setdefault(name, problem)
    if not problems:
        for name, problem in _lab_problems(data, file):
            problems.setdefault(name, problem)
    if problems:
        raise ManifestError([f"{where}: {name}: {problem}" for name, problem in problems.items()])
    return _from_document(data, file.resolve())


# ---------------------------------------------------------------------------------------------
# Finding an app


def known() -> dict[str, Path]:
    """Every manifest in the places APP= searches, by the name its place gives it."""
    found = {p.parent.name: p for p in sorted(APPS_DIR.glob(f"*/{MANIFEST_FILE}"))}
    found.update({p.stem: p for p in sorted(PEERS_DIR.glob("*.yml")) if p.stem not in found})
    return dict(sorted(found.items()))


def is_path(app: str) -> bool:
    return "/" in app or app.endswith((".yml", ".yaml"))


def resolve(app: str) -> Manifest:
    """The manifest APP names (apps/<APP>/perflab-app.yml, apps/peers/<APP>.yml) or that is at path APP."""
    if is_path(app):
        file = Path(app)
        if not file.is_file():
            raise ManifestError([f"no manifest at {app}: APP= takes a manifest's name ({', '.join(known())}) "
                                 "or the path of a manifest file"])
        return load(file)
    names = known()
    if app not in names:
        given = f"unknown app {app!r}" if app else "no app given"
        raise ManifestError([f"{given}: the known apps are {', '.join(names)} (APP= takes one of them or the path "
                             "of a manifest file)"])
    return load(names[app])


# ---------------------------------------------------------------------------------------------
# Variants


def choose(manifest: Manifest, selections: Sequence[str], strict: bool = True) -> dict[str, str]:
    """Every variant's option: the default unless SELECTIONS ("key=value", or "value" where one
    variant has such an option) chooses another. strict=False skips a key the app has no variant
    for (make compare: THREADS= concerns only the apps with threads)."""
    chosen = {name: variant.default for name, variant in manifest.variants.items()}
    offered = "; ".join(f"{n}: {'|'.join(v.options)}" for n, v in manifest.variants.items()) or "none"
    for selection in selections:
        key, equals, value = selection.partition("=")
        if not equals:
            holders = [n for n, v in manifest.variants.items() if selection in v.options]
            if not holders and not strict:
                continue
            if len(holders) != 1:
                raise ManifestError([f"{manifest.name}: variant option {selection!r} "
                                     f"{'is ambiguous' if holders else 'is unknown'}; give key=value: the variants are {offered}"])
            key, value = holders[0], selection
        if key not in manifest.variants:
            if not strict:
                continue
            raise ManifestError([f"{manifest.name} has no variant {key!r}: its variants are {offered}"])
        if value not in manifest.variants[key].options:
            raise ManifestError([f"{manifest.name}: variant {key} has no option {value!r}: "
                                 f"use one of {', '.join(manifest.variants[key].options)}"])
        chosen[key] = value
    return chosen


def variant_selections(text: str) -> list[str]:
    """VARIANT="threads=virtual dispatch=worker" (also commas) as selections."""
    return [part for part in re.split(r"[\s,]+", text) if part]


# ---------------------------------------------------------------------------------------------
# Where the artifact is


def _environment_value(expression: str, environ: Mapping[str, str], where: str) -> str:
    name, has_default, default = expression.partition(":-")
    if name in environ and environ[name] != "":
        return environ[name]
    if has_default:
        return default
    raise ManifestError([f"{where}: ${{{name}}} is not set in the environment: set it (e.g. make deploy {name}=...) "
                         f"or give a default, ${{{name}:-...}}"])


def controller_text(manifest: Manifest, text: str, where: str, environ: Mapping[str, str] | None = None) -> str:
    values = os.environ if environ is None else environ
    return _expand(text, lambda expression: _environment_value(expression, values, f"{shown(manifest.file)}: {where}"))


def artifact_dir(manifest: Manifest, environ: Mapping[str, str] | None = None) -> Path:
    directory = Path(controller_text(manifest, manifest.artifact.dir, "artifact.dir", environ))
    return (manifest.file.parent / directory).resolve()


def artifact_path(manifest: Manifest, environ: Mapping[str, str] | None = None, db_engine: str | None = None) -> Path:
    """The artifact deployed on DB_ENGINE (the db host's lab_db_engine): its artifact.by_db_engine entry, else
    artifact.path."""
    if db_engine in manifest.artifact.by_db_engine:
        return artifact_dir(manifest, environ) / controller_text(manifest, manifest.artifact.by_db_engine[db_engine],
                                                                 f"artifact.by_db_engine.{db_engine}", environ)
    return artifact_dir(manifest, environ) / controller_text(manifest, manifest.artifact.path, "artifact.path", environ)


def artifact_paths(manifest: Manifest, environ: Mapping[str, str] | None = None) -> list[Path]:
    """Every artifact the build makes: artifact.path's and each of artifact.by_db_engine's."""
    paths = [artifact_path(manifest, environ)]
    for engine in manifest.artifact.by_db_engine:
        paths.append(artifact_path(manifest, environ, engine))
    return paths


def database_files(manifest: Manifest, environ: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """The app's own database as role mysql creates and restores it: its name and its SQL files on the
    controller; ManifestError when a file is not there. None: the app uses the lab's database."""
    if manifest.database is None:
        return None
    found = {"name": manifest.database.name}
    for key in ("schema", "seed"):
        path = artifact_dir(manifest, environ) / controller_text(manifest, getattr(manifest.database, key), f"database.{key}",
                                                              environ)
        if not path.is_file():
            raise ManifestError([f"{shown(manifest.file)}: database.{key}: {shown(path)} is not a file"])
        found[key] = str(path)
    return found


def claims(manifest: Manifest, scenario: str) -> bool:
    """Whether MANIFEST claims SCENARIO= (a built-in's name, or a scenario file: the same file)."""
    if not is_scenario_file(scenario):
        return scenario in manifest.scenarios
    wanted = Path(scenario).resolve()
    return any(is_scenario_file(own) and (manifest.file.parent / own).resolve() == wanted for own in manifest.scenarios)


# ---------------------------------------------------------------------------------------------
# What role `app` deploys


def deploy_vars(manifest: Manifest, variants: Mapping[str, str], lab: Mapping[str, str],
                port: int | None = None) -> dict[str, Any]:
    """The deployment of MANIFEST with VARIANTS (from choose()): artifact, launch, endpoints and the
    app's environment with the lab's variables filled in from LAB (one not given stays ${name});
    the variables whose value is ${db_password} are listed apart (password_env), never valued.
    PORT moves an app that reads ${http_port} to another port (the contract suite's free port)."""
    unknown = sorted(set(lab) - set(LAB_VARIABLES))
    if unknown:
        raise ManifestError([f"unknown lab variable(s) {', '.join(unknown)}: the lab's variables are {', '.join(LAB_VARIABLES)}"])
    if "db_engine" in lab and lab["db_engine"] not in manifest.db_engines:
        raise ManifestError([f"{manifest.name} speaks {', '.join(manifest.db_engines)} ({recorded(manifest.file)}: db_engines), "
                             f"and the lab's db host runs {lab['db_engine']} (lab_db_engine)"])
    options = [manifest.variants[name].options[value] for name, value in variants.items()]
    env = dict(manifest.env)
    for option in options:
        env.update(option.env)
    jvm_options = [*manifest.launch.jvm_options, *(o for option in options for o in option.jvm_options)]
    args = [*manifest.launch.args, *(a for option in options for a in option.args)]
    texts = [*env.values(), *jvm_options, *args]
    if port is not None and port != manifest.port and not any("${http_port}" in text for text in texts):
        raise ManifestError([f"{manifest.name} listens on port {manifest.port}: its manifest passes no ${{http_port}} "
                             "to the app, so it cannot be moved to another port"])
    values = {"http_port": str(port or manifest.port), **lab}
    if manifest.database is not None:
        values["db_name"] = manifest.database.name

    def fill(text: str) -> str:
        return _expand(text, lambda name: values.get(name, "${" + name + "}"))

    path = artifact_path(manifest, db_engine=lab.get("db_engine"))
    directory = manifest.launch.jar is not None
    return {
        "name": manifest.name,
        "manifest": recorded(manifest.file),
        "builtin": manifest.builtin,
        "java": max([manifest.java, *(o.java for o in options if o.java is not None)]),
        "artifact": {"path": str(path), "kind": "directory" if directory else "jar", "name": path.name},
        "launch": {"jar": f"{path.name}/{manifest.launch.jar}" if directory else path.name,
                   "jvm_options": [fill(o) for o in jvm_options], "args": [fill(a) for a in args]},
        "port": port or manifest.port,
        "readiness": dataclasses.asdict(manifest.readiness),
        "metrics": None if manifest.metrics is None else dataclasses.asdict(manifest.metrics),
        "env": {name: fill(value) for name, value in env.items() if value != "${" + PASSWORD + "}"},
        "password_env": [name for name, value in env.items() if value == "${" + PASSWORD + "}"],
        "password_file": any("${" + PASSWORD_FILE + "}" in text for text in texts),
        "scenarios": list(manifest.scenarios),
        "variants": dict(variants),
        "database": database_files(manifest),
        "db_engines": list(manifest.db_engines),
    }


def recorded(file: Path) -> str:
    """A manifest's path as a deployment records it: relative to the checkout when inside it."""
    try:
        return str(file.resolve().relative_to(ROOT))
    except ValueError:
        return str(file.resolve())


def claiming(scenario: str) -> list[Manifest]:
    """Every known app whose manifest claims SCENARIO; ManifestError for a manifest that is wrong."""
    manifests, problems = loaded()
    if problems:
        raise ManifestError(problems)
    return [m for m in manifests if claims(m, scenario)]


def loaded() -> tuple[list[Manifest], list[str]]:
    """Every known app's manifest, and the problems of those that are wrong."""
    manifests: list[Manifest] = []
    problems: list[str] = []
    for file in known().values():
        try:
            manifests.append(load(file))
        except ManifestError as error:
            problems += error.problems
    return manifests, problems
