"""Every role's README lists its variables as perflab.roledoc renders them from the role's
meta/argument_specs.yml and defaults/main.yml (`make roledocs`), and the specs cover the role:
every variable of defaults/main.yml, a default that agrees with it, an entry point for every
`tasks_from` the playbooks and roles use, named as they call it (Ansible validates an entry
point's variables only under that exact name)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from perflab import roledoc

REPO = Path(__file__).resolve().parents[2]
ROLES_DIR = REPO / "roles"
ROLES = {role.name: role for role in roledoc.roles_in(ROLES_DIR)}
# Where include_role / import_role may name an entry point.
INCLUDERS = sorted([*(REPO / "playbooks").rglob("*.yml"), *ROLES_DIR.glob("*/tasks/*.yml"),
                    *ROLES_DIR.glob("*/handlers/*.yml"), *(REPO / "tests").rglob("*.yml")])
ROLE_ACTIONS = {f"{prefix}{action}" for prefix in ("", "ansible.builtin.", "ansible.legacy.")
                for action in ("include_role", "import_role")}


def role(options: dict[str, Any] | None = None, defaults: dict[str, Any] | None = None,
         entry_points: dict[str, dict[str, Any]] | None = None) -> roledoc.Role:
    main = {"short_description": "Does a thing", "options": options if options is not None else {}}
    return roledoc.Role(name="demo", path=Path("/nowhere/demo"), entry_points={"main": main, **(entry_points or {})},
                        defaults=defaults or {})


def test_the_roles_are_found() -> None:
    assert {"app", "bench", "loadgen", "mysql", "preflight", "prometheus"} <= set(ROLES)
    assert len(ROLES) == len([p for p in ROLES_DIR.iterdir() if (p / "tasks").is_dir()])


def test_checked_in_readmes_are_what_make_roledocs_writes() -> None:
    done = subprocess.run([sys.executable, "-m", "perflab.roledoc", "--check", str(ROLES_DIR)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", sorted(ROLES))
def test_readme_has_the_generated_section_as_rendered(name: str) -> None:
    current = roledoc.current_readme(ROLES[name])
    assert current is not None, f"roles/{name}/README.md is missing: run `make roledocs` and commit"
    assert current.count(roledoc.BEGIN_PREFIX) == 1 and current.count(roledoc.END_PREFIX) == 1
    assert roledoc.update_readme(current, ROLES[name]) == current, (
        f"roles/{name}/README.md's variables differ from roles/{name}/meta/argument_specs.yml and "
        f"defaults/main.yml: run `make roledocs` and commit")
    assert current.startswith(f"# {name}\n"), "the README's own text (its title first) stays outside the markers"


@pytest.mark.parametrize("name", sorted(ROLES))
def test_main_declares_every_default_variable(name: str) -> None:
    main = ROLES[name].entry_points["main"].get("options") or {}
    missing = [variable for variable in ROLES[name].defaults if variable not in main]
    assert not missing, f"roles/{name}/meta/argument_specs.yml: main does not declare {', '.join(missing)} (defaults/main.yml)"


@pytest.mark.parametrize("name", sorted(ROLES))
def test_declared_defaults_agree_with_defaults_main(name: str) -> None:
    wrong = [f"{entry}: {option} = {spec['default']!r}, defaults/main.yml: {ROLES[name].defaults[option]!r}"
             for entry, entry_spec in ROLES[name].entry_points.items()
             for option, spec in (entry_spec.get("options") or {}).items()
             if "default" in spec and option in ROLES[name].defaults and spec["default"] != ROLES[name].defaults[option]]
    assert not wrong, f"roles/{name}/meta/argument_specs.yml: {wrong}"


@pytest.mark.parametrize("name", sorted(ROLES))
def test_every_option_has_a_description_and_a_known_type(name: str) -> None:
    types = {"str", "list", "dict", "bool", "int", "float", "path", "raw"}
    for entry, spec in ROLES[name].entry_points.items():
        assert spec.get("short_description"), f"roles/{name}: entry point {entry} has no short_description"
        for option, option_spec in (spec.get("options") or {}).items():
            assert option_spec.get("description"), f"roles/{name}: {entry}: {option} has no description"
            assert option_spec.get("type", "str") in types, f"roles/{name}: {entry}: {option}: type {option_spec.get('type')}"


def role_includes(node: Any) -> Iterator[tuple[str, str]]:
    """(role, tasks_from) of every include_role / import_role with a tasks_from, anywhere in node."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ROLE_ACTIONS and isinstance(value, dict) and "tasks_from" in value:
                yield str(value["name"]), str(value["tasks_from"])
            else:
                yield from role_includes(value)
    elif isinstance(node, list):
        for item in node:
            yield from role_includes(item)


def tasks_from_uses() -> dict[tuple[str, str], list[str]]:
    uses: dict[tuple[str, str], list[str]] = {}
    for path in INCLUDERS:
        for use in role_includes(roledoc.load_yaml(path)):
            uses.setdefault(use, []).append(str(path.relative_to(REPO)))
    return uses


def test_the_includes_are_found() -> None:
    uses = tasks_from_uses()
    assert ("mysql", "reset.yml") in uses and ("bench", "run_phase.yml") in uses and ("preflight", "hosts") in uses


def test_every_tasks_from_has_an_entry_point_of_that_name() -> None:
    missing = [f"{name} tasks_from {entry} ({', '.join(sorted(set(where)))})"
               for (name, entry), where in sorted(tasks_from_uses().items())
               if "{{" not in name + entry and entry not in ROLES[name].entry_points]
    assert not missing, (
        f"no argument spec for {'; '.join(missing)}: add the entry point, named exactly as called, to the role's "
        f"meta/argument_specs.yml and run `make roledocs`")


def test_no_entry_point_is_left_unused() -> None:
    used = {(name, "main") for name in ROLES} | set(tasks_from_uses())
    unused = [f"{name} {entry}" for name, r in ROLES.items() for entry in r.entry_points if (name, entry) not in used]
    assert not unused, f"entry points no playbook or role calls (a renamed tasks_from?): {unused}"


# --- roles/_common: its imports are checked here, not at run time ---------------------------------

def common_imports() -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, task) of every task of a role that imports or includes role _common."""
    def tasks(node: Any) -> Iterator[dict[str, Any]]:
        if isinstance(node, dict):
            action = next((node[key] for key in ROLE_ACTIONS if key in node), None)
            if isinstance(action, dict) and action.get("name") == "_common":
                yield node
            for value in node.values():
                yield from tasks(value)
        elif isinstance(node, list):
            for item in node:
                yield from tasks(item)

    for path in ROLES_DIR.glob("*/tasks/*.yml"):
        for task in tasks(roledoc.load_yaml(path)):
            yield f"{path.relative_to(REPO)}: {task.get('name')}", task


def test_the_common_imports_are_found() -> None:
    entry_points = {next(task[key] for key in ROLE_ACTIONS if key in task)["tasks_from"] for _, task in common_imports()}
    assert entry_points == {"probe.yml", "install.yml", "write.yml", "service.yml"}


def test_common_is_imported_statically_without_a_validation_task() -> None:
    # Ansible's validation task is tagged `always`: under --tags it would run where the role's probe
    # did not, and fail on its undefined result (roles/_common/README.md).
    wrong = [where for where, task in common_imports()
             if not any(f"{prefix}import_role" in task for prefix in ("", "ansible.builtin."))
             or next(task[key] for key in ROLE_ACTIONS if key in task).get("rolespec_validate") is not False]
    assert not wrong, f"import _common with import_role and rolespec_validate: false: {wrong}"


def test_common_imports_pass_the_entry_points_variables() -> None:
    """What Ansible's validation would check, and more: a misspelt optional variable is an error here."""
    wrong = []
    for where, task in common_imports():
        entry = next(task[key] for key in ROLE_ACTIONS if key in task)["tasks_from"]
        options = ROLES["_common"].entry_points[entry].get("options") or {}
        given = task.get("vars") or {}
        wrong += [f"{where}: {name} is not a variable of {entry}" for name in given if name not in options]
        wrong += [f"{where}: {entry} needs {name}" for name, spec in options.items() if spec.get("required") and name not in given]
        for name, value in given.items():
            suboptions = options.get(name, {}).get("options")
            if not suboptions or not isinstance(value, list):
                continue
            for item in value:
                wrong += [f"{where}: {name}: {key} is not one of {sorted(suboptions)}" for key in item if key not in suboptions]
                wrong += [f"{where}: {name}: {item} needs {key}" for key, spec in suboptions.items()
                          if spec.get("required") and key not in item]
    assert not wrong, "\n".join(wrong)


# --- rendering ----------------------------------------------------------------------------------

def test_a_row_has_type_default_required_and_description_with_choices() -> None:
    demo = role(options={
        "demo_port": {"type": "int", "description": "Port.", "required": True},
        "demo_mode": {"type": "str", "default": "fast", "choices": ["fast", "slow"], "description": ["Mode,", "V(fast) or V(slow)."]},
        "demo_hosts": {"type": "list", "elements": "str", "description": "Hosts."},
    }, defaults={"demo_port": 8080, "demo_hosts": "{{ groups['lab'] | default([]) }}"})
    rows = [line for line in roledoc.render_section(demo).splitlines() if line.startswith("| `")]
    assert rows == [
        "| `demo_port` | int | `8080` | yes | Port. |",
        "| `demo_mode` | str | `fast` | no | Mode, `fast` or `slow`. Choices: `fast`, `slow`. |",
        r"| `demo_hosts` | list of str | `{{ groups['lab'] \| default([]) }}` | no | Hosts. |",
    ]


def test_defaults_are_written_as_yaml_flow_and_long_ones_point_at_the_file() -> None:
    assert roledoc.flow({"Debian": ["12"], "x": [True, None, 0.5, ""]}) == '{Debian: ["12"], x: [true, null, 0.5, ""]}'
    assert roledoc.flow("1024 65535") == "1024 65535" and roledoc.flow("a, b") == '"a, b"' and roledoc.flow("%") == '"%"'
    assert roledoc.flow("{{ a }}\n  ~ b") == "{{ a }} ~ b"
    demo = role(options={"demo_list": {"description": "Long."}}, defaults={"demo_list": [f"package-{i}" for i in range(20)]})
    assert "| `demo_list` | str | see [defaults/main.yml](defaults/main.yml) | no | Long. |" in roledoc.render_section(demo)


def test_ansible_markup_becomes_markdown_and_text_stays_text() -> None:
    text = "Set O(x_port) to V(80) (C(a|b)), E(HOME), I(it), B(bold), U(https://e.x), L(docs,https://d.x); `raw` <run id> *all*"
    assert roledoc.markdown(text) == (
        "Set `x_port` to `80` (`a|b`), `HOME`, *it*, **bold**, <https://e.x>, [docs](https://d.x); "
        r"`raw` &lt;run id> \*all\*")
    assert roledoc.markdown("CPU(s) and HTTP(S) stay") == "CPU(s) and HTTP(S) stay"


def test_entry_points_in_order_and_the_same_variables_as_main_said_once() -> None:
    options = {"demo_x": {"type": "int", "description": "X."}}
    demo = role(options=options, entry_points={
        "check.yml": {"short_description": "Checks", "description": ["Changes nothing."], "options": options},
        "other": {"short_description": "Other", "options": {}},
    })
    section = roledoc.render_section(demo)
    assert section.startswith(roledoc.BEGIN + "\n## Variables\n") and section.endswith("\n\n" + roledoc.END)
    assert section.index("### Entry point `main`") < section.index("### Entry point `tasks_from: check.yml`") \
        < section.index("### Entry point `tasks_from: other`")
    assert "Checks\n\nChanges nothing.\n\nThe variables of `main`." in section
    assert "Other\n\nNo variables." in section


def test_update_keeps_the_text_around_the_markers() -> None:
    demo = role(options={"demo_x": {"description": "X."}})
    readme = f"# demo\n\nWhat it does.\n\n{roledoc.BEGIN_PREFIX} (old) -->\nstale\n{roledoc.END_PREFIX} -->\n\nTags: `demo`.\n"
    updated = roledoc.update_readme(readme, demo)
    assert updated == f"# demo\n\nWhat it does.\n\n{roledoc.render_section(demo)}\n\nTags: `demo`.\n"
    assert roledoc.update_readme(updated, demo) == updated


def test_a_readme_without_markers_gets_the_section_at_its_end_and_a_missing_one_is_created() -> None:
    demo = role(options={"demo_x": {"description": "X."}})
    assert roledoc.update_readme("# demo\n\nProse.\n\n\n", demo) == f"# demo\n\nProse.\n\n{roledoc.render_section(demo)}\n"
    assert roledoc.update_readme(None, demo) == f"# demo\n\n{roledoc.render_section(demo)}\n"


def test_markers_out_of_order_are_refused() -> None:
    with pytest.raises(roledoc.RoleDocError, match="exactly one"):
        roledoc.update_readme(f"{roledoc.END}\n{roledoc.BEGIN}\n", role())
    with pytest.raises(roledoc.RoleDocError, match="exactly one"):
        roledoc.update_readme(f"{roledoc.BEGIN}\n{roledoc.END}\n{roledoc.BEGIN}\n", role())


def test_a_role_without_specs_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bare" / "tasks").mkdir(parents=True)
    with pytest.raises(roledoc.RoleDocError, match="argument_specs.yml is missing"):
        roledoc.roles_in(tmp_path)


def test_the_command_writes_then_finds_nothing_to_do(tmp_path: Path) -> None:
    (tmp_path / "demo" / "tasks").mkdir(parents=True)
    (tmp_path / "demo" / "meta").mkdir()
    (tmp_path / "demo" / "meta" / "argument_specs.yml").write_text(
        "---\nargument_specs:\n  main:\n    short_description: Demo\n    options:\n"
        "      demo_x: {type: int, description: X.}\n", encoding="utf-8")
    assert roledoc.main(["--check", str(tmp_path)]) == 1
    assert roledoc.main([str(tmp_path)]) == 0
    assert "| `demo_x` | int |  | no | X. |" in (tmp_path / "demo" / "README.md").read_text(encoding="utf-8")
    assert roledoc.main(["--check", str(tmp_path)]) == 0
