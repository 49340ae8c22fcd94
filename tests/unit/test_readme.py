"""The README's commands exist: every `make X` it gives is a target `make help` lists, every
`VAR=` it gives is one the project reads, and the CLI's docstring names every command.

What counts as a command the README gives: `make X` in a code span or a shell block (prose such
as "make sure" is not one). What counts as a variable the project reads, for an UPPERCASE `VAR=`
anywhere in the README: one the Makefile assigns (`VAR ?=`, `VAR :=`, `VAR =`, `export VAR`), or one
a program of the project reads from the environment: Python's os.environ / os.getenv with the
name as a literal (perflab/, tests/), a role's `lookup('ansible.builtin.env', 'VAR')`, an app
manifest's `${VAR}` (perflab.manifest expands it from the controller's environment), or
scripts/.ci's shell `${VAR` / `$VAR`. SYSTEM names the few the README gives for other programs.

And every role variable it names in a code span (`loadgen_timeout_s`: a name that begins with a role's
name or lab_) is one the lab has: a key in a role's, a playbook's or an inventory's YAML (defaults,
argument specs, group_vars, set_fact, register), or a name the package's code or schemas use (a rule
such as `app_is_bottleneck`, a metric such as `mysql_up`, a field such as `app_layers`). A variable
renamed in its role and not in the README is caught.
"""
from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import perflab.cli

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MAKE_COMMAND = re.compile(r"(?:^|[\s;(&|])make ([a-z][a-z0-9-]*)")
VARIABLE = re.compile(r"(?<![A-Za-z0-9_$])([A-Z][A-Z0-9_]*)=")
SYSTEM = {"TZ": "the JVM's and the C library's time zone (TechEmpower's WebFlux Date header)"}


def named_targets(markdown: str) -> set[str]:
    """The X of every `make X` in a code span or a ```sh block."""
    code = [*re.findall(r"```sh\n(.*?)```", markdown, re.S), *re.findall(r"`([^`\n]+)`", markdown)]
    return {target for text in code for line in text.splitlines() for target in MAKE_COMMAND.findall(line)}


def help_targets() -> set[str]:
    done = subprocess.run(["make", "--no-print-directory", "help"], cwd=REPO, capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": str(REPO)})
    assert done.returncode == 0, done.stderr
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


def makefile_variables() -> set[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^(?:export\s+)?([A-Z][A-Z0-9_]*)\s*(?:\?|:|\+)?=", text, re.M))


def environment_reads() -> set[str]:
    """Every name a program of the project reads from the environment, by the patterns above."""
    patterns = {
        "*.py": r"""(?:environ\.get\(|environ\[|getenv\()\s*["']([A-Z][A-Z0-9_]*)["']""",
        "*.yml": r"""lookup\(\s*["'](?:ansible\.builtin\.)?env["']\s*,\s*["']([A-Z][A-Z0-9_]*)["']""",
        "*.sh": r"\$\{?([A-Z][A-Z0-9_]*)",
    }
    found: set[str] = set()
    for folder in ("perflab", "tests", "roles", "playbooks", "scripts", ".ci"):
        for glob, pattern in patterns.items():
            for path in (REPO / folder).rglob(glob):
                found.update(re.findall(pattern, path.read_text(encoding="utf-8", errors="replace")))
    found.update(re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", (REPO / ".ci" / "run").read_text(encoding="utf-8")))
    for manifest in [*REPO.glob("apps/*/perflab-app.yml"), *REPO.glob("apps/peers/*.yml")]:
        found.update(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", manifest.read_text(encoding="utf-8")))
    return found


def test_every_make_target_the_readme_names_is_in_make_help() -> None:
    named, listed = named_targets(README.read_text(encoding="utf-8")), help_targets()
    assert {"lab", "test", "bench", "sweep", "report"} <= named, "the README's commands were not found"
    assert sorted(named - listed) == [], "named in README.md, missing from `make help`"


def test_a_target_that_does_not_exist_is_caught() -> None:
    markdown = "Run `make report` then\n```sh\nmake no-such-target RATE=1  # comment\n```\nand make sure of it."
    assert named_targets(markdown) == {"report", "no-such-target"}
    assert sorted(named_targets(markdown) - help_targets()) == ["no-such-target"]


def test_every_variable_the_readme_gives_is_read_by_the_project() -> None:
    given = set(VARIABLE.findall(README.read_text(encoding="utf-8")))
    assert {"APP", "SCENARIO", "PERFLAB_WRK2_ARCHIVE", "TFB_DIR"} <= given, "the README's variables were not found"
    unread = given - makefile_variables() - environment_reads() - SYSTEM.keys()
    assert sorted(unread) == [], "given as VAR= in README.md, read by neither the Makefile nor a program"
    assert "NO_SUCH_VARIABLE" not in makefile_variables() | environment_reads()


ROLE_VARIABLE = re.compile(r"(?<![A-Za-z0-9_./$-])([a-z][a-z0-9]*_[a-z0-9_]+)(?![A-Za-z0-9_(/-])")


def named_role_variables(markdown: str) -> set[str]:
    """Every name in a code span that begins with a role's name (roles/<name>, its leading _ and - as _) or lab_."""
    prefixes = tuple(f"{p.name.lstrip('_').replace('-', '_')}_" for p in (REPO / "roles").iterdir() if p.is_dir())
    return {name for span in re.findall(r"`([^`\n]+)`", markdown) for name in ROLE_VARIABLE.findall(span)
            if name.startswith((*prefixes, "lab_"))}


def lab_names() -> set[str]:
    """The names the lab has: YAML keys and registered results under roles/, playbooks/, inventory/, and the
    words of the package's code and schemas."""
    found: set[str] = set()
    for folder in ("roles", "playbooks", "inventory"):
        for path in (REPO / folder).rglob("*.yml"):
            text = path.read_text(encoding="utf-8")
            found.update(re.findall(r"^\s*(?:- )?([a-z_][a-z0-9_]*):", text, re.M))
            found.update(re.findall(r"register:\s*([a-z_][a-z0-9_]*)", text))
    for path in [*(REPO / "perflab").rglob("*.py"), *(REPO / "perflab").rglob("*.json")]:
        found.update(re.findall(r"[a-z_][a-z0-9_]*", path.read_text(encoding="utf-8")))
    return found


def test_every_role_variable_the_readme_names_is_one_the_lab_has() -> None:
    named = named_role_variables(README.read_text(encoding="utf-8"))
    assert {"loadgen_timeout_s", "app_jvm_opts", "lab_db_engine"} <= named, "the README's role variables were not found"
    assert sorted(named - lab_names()) == [], "named in README.md, in no role, playbook, inventory or the package"


def test_a_role_variable_renamed_in_its_role_is_caught() -> None:
    markdown = "Set `loadgen_vegeta_timeout_s` (or `-e loadgen_timeout_s=5`); `perflab/app_build.py` is no variable."
    assert named_role_variables(markdown) == {"loadgen_vegeta_timeout_s", "loadgen_timeout_s"}
    assert sorted(named_role_variables(markdown) - lab_names()) == ["loadgen_vegeta_timeout_s"]


def test_the_clis_docstring_names_every_command() -> None:
    parser = perflab.cli._parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(commands.choices) >= 10
    doc = perflab.cli.__doc__ or ""
    missing = [name for name in commands.choices if not re.search(rf"^  perflab {re.escape(name)}\b", doc, re.M)]
    assert missing == [], "perflab/cli.py's docstring leaves out these commands"
