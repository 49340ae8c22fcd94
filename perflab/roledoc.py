"""Every role's README lists its variables, generated from what the role declares.

`make roledocs` (python -m perflab.roledoc roles) writes, into each role's README.md, a
"Variables" section between two marker comments (BEGIN / END below): one table per entry point
of the role's meta/argument_specs.yml (`main` and every `tasks_from` entry point), each row a
variable with its type, default, whether it is required and its description. The default is the
entry point's own `default`, else the role's defaults/main.yml value (a Jinja expression as
written; a long value points at defaults/main.yml). Text outside the markers is the README's own
and is kept; a README without the markers gets the section at its end, a role without a README a
new one. tests/unit/test_roledoc.py fails when a README's section differs from what this module
renders, so the tables cannot drift from the specs.

Descriptions may use Ansible's documentation markup (ansible-doc renders it too): C(code),
V(value), O(option), E(ENV_VAR) become code, I(text) italics, B(text) bold, U(url) a link,
L(text,url) a named link; Markdown backticks stay code.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

BEGIN = "<!-- BEGIN generated: variables (make roledocs, from meta/argument_specs.yml and defaults/main.yml) -->"
END = "<!-- END generated: variables -->"
# What identifies a marker line, whatever follows it on the line.
BEGIN_PREFIX = "<!-- BEGIN generated: variables"
END_PREFIX = "<!-- END generated: variables"
# A default longer than this (as rendered) is left to defaults/main.yml.
MAX_DEFAULT_CHARS = 120
SPECS = Path("meta") / "argument_specs.yml"
DEFAULTS = Path("defaults") / "main.yml"


class RoleDocError(Exception):
    """A role whose declarations cannot be rendered (no spec, not a mapping, markers out of order)."""


class _Loader(yaml.SafeLoader):  # type: ignore[misc]
    """SafeLoader that reads Ansible's tags (!unsafe, !vault) as their plain value."""


def _any_tag(loader: _Loader, _suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_mapping(node)


_Loader.add_multi_constructor("!", _any_tag)


def load_yaml(path: Path) -> Any:
    """A YAML file as Ansible writes it (its tags read as plain values)."""
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    except yaml.YAMLError as exc:
        raise RoleDocError(f"{path}: not YAML: {exc}") from exc


@dataclass(frozen=True)
class Role:
    name: str
    path: Path
    # Entry point name -> its spec (short_description, description, options), in file order.
    entry_points: dict[str, dict[str, Any]]
    # defaults/main.yml: variable -> value as written (Jinja left as text).
    defaults: dict[str, Any]


def load_role(path: Path) -> Role:
    specs_file = path / SPECS
    if not specs_file.is_file():
        raise RoleDocError(f"{specs_file} is missing: every role declares its variables there (see roles/app/{SPECS})")
    specs = load_yaml(specs_file)
    entry_points = specs.get("argument_specs") if isinstance(specs, dict) else None
    if not isinstance(entry_points, dict) or "main" not in entry_points:
        raise RoleDocError(f"{specs_file}: needs argument_specs.main (and one entry per tasks_from the playbooks use)")
    for name, spec in entry_points.items():
        options = spec.get("options", {}) if isinstance(spec, dict) else None
        if not isinstance(options, dict) or not all(isinstance(o, dict) for o in options.values()):
            raise RoleDocError(f"{specs_file}: entry point {name}: options must map each variable to its spec")
    defaults_file = path / DEFAULTS
    defaults = load_yaml(defaults_file) if defaults_file.is_file() else None
    if defaults is not None and not isinstance(defaults, dict):
        raise RoleDocError(f"{defaults_file}: must be a mapping of variables")
    return Role(name=path.name, path=path, entry_points={str(k): v for k, v in entry_points.items()},
                defaults={str(k): v for k, v in (defaults or {}).items()})


def roles_in(roles_dir: Path) -> list[Role]:
    """Every role under roles_dir (a directory with tasks/), by name."""
    return [load_role(path) for path in sorted(roles_dir.iterdir()) if (path / "tasks").is_dir()]


# --- Markdown -----------------------------------------------------------------------------------

_MARKUP = re.compile(r"`[^`]*`|\b(C|V|O|E|RV|M|I|B|U)\(([^()]*)\)|\bL\(([^(),]*),\s*([^()]*)\)")


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _plain(text: str) -> str:
    """Text outside code, safe in a table cell: no HTML tag, no emphasis by accident."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace("*", r"\*")


def markdown(text: str) -> str:
    """Ansible documentation markup (and Markdown code spans) as Markdown, on one line."""
    text = " ".join(text.split())
    out: list[str] = []
    position = 0
    for match in _MARKUP.finditer(text):
        out.append(_plain(text[position:match.start()]))
        position = match.end()
        whole, kind, inner = match.group(0), match.group(1), match.group(2)
        if whole.startswith("`"):
            out.append(whole)
        elif match.group(3) is not None:
            out.append(f"[{_plain(match.group(3))}]({match.group(4)})")
        elif kind == "I":
            out.append(f"*{_plain(inner)}*")
        elif kind == "B":
            out.append(f"**{_plain(inner)}**")
        elif kind == "U":
            out.append(f"<{inner}>")
        else:
            out.append(_code(inner))
    out.append(_plain(text[position:]))
    return "".join(out)


def _cell(text: str) -> str:
    # GitHub's tables split on every unescaped pipe, in code spans too.
    return text.replace("|", r"\|")


def _scalar(value: str) -> str:
    if "{{" in value or "{%" in value:
        return " ".join(value.split())
    try:
        plain = yaml.safe_load(value) == value
    except yaml.YAMLError:
        plain = False
    return value if plain and value == value.strip() and "," not in value else json.dumps(value)


def flow(value: Any) -> str:
    """A value on one line, as YAML's flow style writes it (Jinja expressions as written)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return _scalar(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{flow(key)}: {flow(item)}" for key, item in value.items()) + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(flow(item) for item in value) + "]"
    return str(value)


def _type(option: Mapping[str, Any]) -> str:
    kind = str(option.get("type", "str"))
    elements = option.get("elements")
    return f"{kind} of {elements}" if kind == "list" and elements else kind


def _default(name: str, option: Mapping[str, Any], defaults: Mapping[str, Any]) -> str:
    if "default" in option:
        value = option["default"]
    elif name in defaults:
        value = defaults[name]
    else:
        return ""
    text = flow(value)
    if len(text) > MAX_DEFAULT_CHARS:
        return f"see [{DEFAULTS.as_posix()}]({DEFAULTS.as_posix()})"
    return _code(text)


def _description(option: Mapping[str, Any]) -> str:
    description = option.get("description", "")
    text = " ".join(description) if isinstance(description, list) else str(description)
    parts = [markdown(text)] if text.strip() else []
    if option.get("choices"):
        parts.append("Choices: " + ", ".join(_code(flow(choice)) for choice in option["choices"]) + ".")
    return " ".join(parts)


def _paragraphs(text: Any) -> list[str]:
    if not text:
        return []
    return [markdown(str(line)) for line in (text if isinstance(text, list) else [text])]


def entry_point_heading(name: str) -> str:
    return "`main`" if name == "main" else f"`tasks_from: {name}`"


def render_entry_point(role: Role, name: str) -> list[str]:
    spec = role.entry_points[name]
    lines = [f"### Entry point {entry_point_heading(name)}", ""]
    for paragraph in _paragraphs(spec.get("short_description")) + _paragraphs(spec.get("description")):
        lines += [paragraph, ""]
    options: dict[str, Any] = spec.get("options") or {}
    if name != "main" and options and options == (role.entry_points["main"].get("options") or {}):
        return lines + ["The variables of `main`.", ""]
    if not options:
        return lines + ["No variables.", ""]
    lines += ["| variable | type | default | required | description |", "| --- | --- | --- | --- | --- |"]
    for option_name, option in options.items():
        cells = [_code(option_name), _type(option), _default(option_name, option, role.defaults),
                 "yes" if option.get("required") else "no", _description(option)]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return lines + [""]


def render_section(role: Role) -> str:
    """The README's generated section, markers included, without a trailing newline."""
    lines = [
        BEGIN,
        "## Variables",
        "",
        f"Generated by `make roledocs` from `{SPECS.as_posix()}` (the variables of each entry point) and "
        f"`{DEFAULTS.as_posix()}` (their defaults): edit those, not this section.",
        "",
    ]
    for name in ["main"] + [n for n in role.entry_points if n != "main"]:
        lines += render_entry_point(role, name)
    return "\n".join(lines).rstrip("\n") + "\n\n" + END


def _marker_lines(lines: list[str], prefix: str) -> list[int]:
    return [index for index, line in enumerate(lines) if line.strip().startswith(prefix)]


def update_readme(text: str | None, role: Role) -> str:
    """The README with its generated section (re)written and everything else kept."""
    section = render_section(role)
    if text is None:
        return f"# {role.name}\n\n{section}\n"
    lines = text.split("\n")
    begins, ends = _marker_lines(lines, BEGIN_PREFIX), _marker_lines(lines, END_PREFIX)
    if not begins and not ends:
        return text.rstrip("\n") + "\n\n" + section + "\n"
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise RoleDocError(f"{role.path / 'README.md'}: needs exactly one {BEGIN_PREFIX} ... --> line "
                           f"followed by one {END_PREFIX} ... --> line")
    return "\n".join(lines[:begins[0]] + [section] + lines[ends[0] + 1:])


def readme_path(role: Role) -> Path:
    return role.path / "README.md"


def current_readme(role: Role) -> str | None:
    path = readme_path(role)
    return path.read_text(encoding="utf-8") if path.is_file() else None


def stale(roles: list[Role]) -> list[Role]:
    """The roles whose README differs from what this module renders."""
    return [role for role in roles if current_readme(role) != update_readme(current_readme(role), role)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perflab.roledoc",
                                     description="Write each role's variables into its README.md (between the markers).")
    parser.add_argument("roles_dir", nargs="?", default="roles", type=Path, help="the roles' directory (default: roles)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a README is out of date")
    args = parser.parse_args(argv)
    if not args.roles_dir.is_dir():
        print(f"perflab roledoc: {args.roles_dir} is not a directory", file=sys.stderr)
        return 2
    try:
        roles = roles_in(args.roles_dir)
        outdated = stale(roles)
        if args.check:
            for role in outdated:
                print(f"{readme_path(role)} differs from its specs: run `make roledocs` and commit", file=sys.stderr)
            return 1 if outdated else 0
        for role in outdated:
            readme_path(role).write_text(update_readme(current_readme(role), role), encoding="utf-8")
            print(f"wrote {readme_path(role)}")
    except RoleDocError as exc:
        print(f"perflab roledoc: {exc}", file=sys.stderr)
        return 2
    print(f"{len(roles) - len(outdated)} of {len(roles)} role READMEs were up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
