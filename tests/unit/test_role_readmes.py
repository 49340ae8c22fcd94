"""Every role has a README whose variables table names every variable of its defaults/main.yml.

A variable is documented when a row of a Markdown table in the role's README names it, in
backticks, in its first cell (`| `mysql_port` | `3306` | port the server listens on |`): a new
variable without a row fails here, so the README keeps listing every variable the role offers.
"""

from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]

ROLES_DIR = Path(__file__).resolve().parents[2] / "roles"
ROLES = sorted(path.name for path in ROLES_DIR.iterdir() if (path / "tasks").is_dir())


def default_variables(role: str) -> list[str]:
    defaults = ROLES_DIR / role / "defaults" / "main.yml"
    if not defaults.is_file():
        return []
    loaded = yaml.safe_load(defaults.read_text(encoding="utf-8"))
    if loaded is None:
        return []
    assert isinstance(loaded, dict), f"{defaults} must be a mapping of variables"
    return [str(name) for name in loaded]


def table_rows_first_cells(readme: str) -> list[str]:
    """The first cell of every Markdown table row, header and separator rows included."""
    cells = []
    for line in readme.splitlines():
        stripped = line.strip()
        if stripped.startswith("|") and stripped.count("|") >= 2:
            cells.append(stripped.split("|")[1])
    return cells


def documented_variables(readme: str) -> set[str]:
    names: set[str] = set()
    for cell in table_rows_first_cells(readme):
        names.update(part for index, part in enumerate(cell.split("`")) if index % 2 == 1)
    return names


def test_the_roles_are_found() -> None:
    assert {"app", "loadgen", "mysql", "prometheus"} <= set(ROLES)


def test_default_variables_read_the_yaml_keys() -> None:
    assert default_variables("mysql")[:2] == ["mysql_port", "mysql_bind_address"]


def test_a_variable_counts_only_in_a_table_row() -> None:
    readme = "Set `x_port` here.\n\n| variable | default | meaning |\n| --- | --- | --- |\n| `x_host` | `\"\"` | bind |\n"
    assert documented_variables(readme) == {"x_host"}


@pytest.mark.parametrize("role", ROLES)
def test_role_has_a_readme(role: str) -> None:
    readme = ROLES_DIR / role / "README.md"
    assert readme.is_file(), (
        f"roles/{role} has no README.md: say what the role does, its entry points and a table "
        f"of every variable of defaults/main.yml (see roles/node_exporter/README.md)"
    )


@pytest.mark.parametrize("role", ROLES)
def test_readme_names_every_default_variable(role: str) -> None:
    readme = ROLES_DIR / role / "README.md"
    if not readme.is_file():
        pytest.skip("no README (test_role_has_a_readme fails)")
    documented = documented_variables(readme.read_text(encoding="utf-8"))
    missing = [name for name in default_variables(role) if name not in documented]
    assert not missing, (
        f"roles/{role}/README.md does not document {', '.join(missing)} (roles/{role}/defaults/main.yml): "
        f"add a row | `<variable>` | <default> | <meaning> | to its variables table"
    )
