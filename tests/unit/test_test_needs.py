"""scripts/test-needs.sh, the check `make test` and `make test-lab` start with: what their tests need
and make cannot install (a wrk2 source, TechEmpower's checkout) refused in one line naming what to
set, before anything is installed or run."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "test-needs.sh"
DEFAULTS = REPO / "roles" / "loadgen" / "defaults" / "main.yml"
COMMIT = "44a94c17d8e6a0bac8559b53da76848e430cb7a7"


def needs(defaults: Path, tfb: Path, archive: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PERFLAB_WRK2_ARCHIVE"}
    if archive is not None:
        env["PERFLAB_WRK2_ARCHIVE"] = archive
    return subprocess.run([str(SCRIPT), str(defaults), str(tfb)], capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture
def sources(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An archive file, a TechEmpower checkout with the pom the matrix builds, and the role's defaults
    with an upstream that answers nowhere (a closed port)."""
    archive = tmp_path / f"wrk2-{COMMIT}.tar.gz"
    archive.write_bytes(b"\x1f\x8b")
    pom = tmp_path / "tfb" / "frameworks" / "Java" / "quarkus" / "pom.xml"
    pom.parent.mkdir(parents=True)
    pom.write_text("<project/>")
    defaults = tmp_path / "defaults.yml"
    text = DEFAULTS.read_text(encoding="utf-8")
    defaults.write_text(re.sub(r"(?m)^loadgen_wrk2_git_repo: .*$", "loadgen_wrk2_git_repo: http://127.0.0.1:9/wrk2.git",
                               text))
    return archive, tmp_path / "tfb", defaults


def test_everything_there_passes_silently(sources: tuple[Path, Path, Path]) -> None:
    archive, tfb, defaults = sources
    done = needs(defaults, tfb, str(archive))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_an_archive_that_is_not_a_file_is_refused_in_one_line(sources: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, tfb, defaults = sources
    done = needs(defaults, tfb, str(tmp_path / "missing.tar.gz"))
    assert done.returncode == 2
    assert done.stderr == (f"perflab: make test: PERFLAB_WRK2_ARCHIVE={tmp_path / 'missing.tar.gz'} is not a file: set it "
                           f"to wrk2-{COMMIT}.tar.gz (git archive --format=tar.gz --prefix=wrk2-{COMMIT}/ {COMMIT})\n")


def test_no_archive_and_an_upstream_that_does_not_answer_is_refused(sources: tuple[Path, Path, Path]) -> None:
    _, tfb, defaults = sources
    done = needs(defaults, tfb, None)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("perflab: make test runs wrk2 and has no source for it: http://127.0.0.1:9/wrk2.git "
                                  f"does not answer from here; set PERFLAB_WRK2_ARCHIVE=/path/wrk2-{COMMIT}.tar.gz")


def test_no_techempower_checkout_is_refused(sources: tuple[Path, Path, Path], tmp_path: Path) -> None:
    archive, _, defaults = sources
    done = needs(defaults, tmp_path / "nowhere", str(archive))
    assert done.returncode == 2
    assert done.stderr == ("perflab: make test-bench measures TechEmpower's Quarkus beside ours (tests/matrix_lab) and has "
                           f"no checkout of theirs at {tmp_path / 'nowhere'}: set PERFLAB_TFB_DIR=/path/to/FrameworkBenchmarks\n")


def test_without_a_techempower_checkout_to_check_none_is_asked_for(sources: tuple[Path, Path, Path]) -> None:
    """make test runs no matrix (make test-bench does): it names no checkout, and none is needed."""
    archive, _, defaults = sources
    env = {**os.environ, "PERFLAB_WRK2_ARCHIVE": str(archive)}
    done = subprocess.run([str(SCRIPT), str(defaults)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done


def test_make_test_and_test_lab_check_first() -> None:
    """Their first prerequisite, so that the check runs before the venv, apt and the apps' build."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    for target in ("test", "test-lab"):
        (line,) = re.findall(rf"(?m)^{target}: (.*?) ##", makefile)
        assert line.split()[0] == "test-needs", (target, line)
    recipe = re.search(r"(?m)^test-needs:\n((?:\t.*\n)+)", makefile)
    assert recipe is not None and "scripts/test-needs.sh roles/loadgen/defaults/main.yml" in recipe.group(1)
