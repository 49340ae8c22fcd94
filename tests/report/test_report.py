"""`perflab report` as a user runs it: on a results directory built from real tool output, with
every kind of bad input; what it prints, its exit code, and what the page says."""

from __future__ import annotations

import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from perflab import report

from .builder import BAD_INPUT, GOOD_RUNS, LAB_RUN_ID, MIB, QUARKUS_MAX_RSS_BYTES, SWEEP_ID, TABLE_RUN, \
    add_fixture_run, full_results, good_results, perflab

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return full_results(tmp_path_factory.mktemp("results"))


@pytest.fixture(scope="module")
def full_report(full: Path) -> subprocess.CompletedProcess[str]:
    return perflab("report", "--results", full)


class _Text(HTMLParser):
    """The page's text by element class: what a reader sees in each list, table and chart."""

    def __init__(self) -> None:
        super().__init__()
        self.by_class: dict[str, list[str]] = {}
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack.append(dict(attrs).get("class") or "")

    def handle_endtag(self, tag: str) -> None:
        if self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1]:
            self.by_class.setdefault(self.stack[-1], []).append(data)


def _page(results: Path) -> tuple[str, _Text]:
    page = (results / "report.html").read_text(encoding="utf-8")
    parsed = _Text()
    parsed.feed(page)
    return page, parsed


def test_bad_input_one_line_each_on_stderr_and_in_the_page(full: Path, full_report: subprocess.CompletedProcess[str]) -> None:
    assert full_report.returncode == report.EXIT_WRITTEN_WITH_PROBLEMS, full_report.stderr
    lines = full_report.stderr.splitlines()
    assert lines and all(line.startswith("perflab: report: ") for line in lines), lines
    problems = [line.removeprefix("perflab: report: ") for line in lines]
    for directory, message in BAD_INPUT.items():
        assert any(p.startswith(f"{directory}: {message}") for p in problems), (directory, message, problems)
    # The runs without Prometheus data (the wrk2 and vegeta fixture runs) each say so; the lab run has it.
    for run in GOOD_RUNS:
        assert f"{run.run_id}: no utilization.json: no Prometheus data for this run; utilization not recorded" in problems
    assert not any(p.startswith(LAB_RUN_ID) for p in problems)
    _, text = _page(full)
    assert [" ".join(t.split()) for t in text.by_class["problem"][: len(problems)]] == problems


def test_the_report_still_shows_every_good_run(full: Path, full_report: subprocess.CompletedProcess[str]) -> None:
    assert full_report.stdout.strip() == (
        f"{full / 'report.html'}: 14 runs (2 VALID or WARN), 1 sweeps, {len(full_report.stderr.splitlines())} problems")
    page, text = _page(full)
    for run_id in [LAB_RUN_ID, *(r.run_id for r in GOOD_RUNS)]:
        assert f'id="run-{run_id}"' in page
    verdicts = text.by_class
    assert verdicts["verdict VALID"] and verdicts["verdict INVALID"] and verdicts["verdict WARN"]
    # Every rule of every verdict is there with its evidence: e.g. the non-2xx run's.
    assert "1463 non-2xx responses" in page or "http_status 1463" in page, "the non-2xx run's evidence is missing"
    # One latency chart per app variant; the uncorrected spectrum of the -U run is drawn dashed.
    assert page.count('class="chart chart-latency"') == 3  # quarkus, spring-mvc, spring-mvc+virtual
    assert re.search(r'<polyline class="series" points="[^"]+" stroke="#[0-9a-f]+" stroke-dasharray="6 4">'
                     r"<title>greeting at 600/s, wrk2, INVALID [^<]*uncorrected</title>", page)
    assert page.count('class="chart chart-sweep"') == 1
    assert page.count('class="chart chart-cpu"') == 1 and page.count('class="chart chart-memory"') == 1
    assert "Per-tier utilization not recorded: no utilization.json" in page


def test_the_page_fetches_nothing(full: Path, full_report: subprocess.CompletedProcess[str]) -> None:
    page, _ = _page(full)
    assert "default-src 'none'" in page
    assert "<script" not in page and "@import" not in page and "url(" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert set(re.findall(r"https?://[^\"' <]+", page)) <= {"http://www.w3.org/2000/svg"}


def test_report_3_table_from_observations_utilization_and_sweeps(full: Path) -> None:
    table = report.compare(report.load(full))
    greeting = table["greeting"]
    assert list(greeting) == ["quarkus", "spring-mvc", "spring-mvc+virtual"]
    quarkus = greeting["quarkus"]
    # The mean over every readable quarkus greeting run, judged or not: the start does not depend on
    # the load (6581 and 6918 ms, and 6581 ms of the run whose audit.json is corrupt).
    assert quarkus.start_to_first_request_ms.value == pytest.approx((6581 + 6918 + 6581) / 3)
    assert quarkus.max_rss_mib.value == pytest.approx(QUARKUS_MAX_RSS_BYTES / MIB)
    assert "observations.json" in quarkus.max_rss_mib.source
    # No sweep for quarkus: the best VALID/WARN run's achieved rate (the overloaded run is INVALID).
    steady = report.load(full).runs
    achieved = next(r.result.achieved_rate for r in steady if r.run_id == GOOD_RUNS[0].run_id and r.result)
    assert quarkus.max_throughput.value == pytest.approx(achieved)
    assert quarkus.throughput_per_mib.value == pytest.approx(achieved / (QUARKUS_MAX_RSS_BYTES / MIB))
    # spring-mvc has a sweep: its max sustainable rate wins over any run.
    mvc = greeting["spring-mvc"]
    assert (mvc.max_throughput.value, mvc.max_throughput.source) == (200, "max sustainable rate of a sweep")
    assert mvc.max_rss_mib.value is None and mvc.throughput_per_mib.value is None  # not recorded
    # The lab run: INVALID, so no throughput, but its RSS comes from utilization.json's app tier.
    zipcodes = table["zipcodes"]["quarkus"]
    assert zipcodes.max_throughput.value is None
    assert zipcodes.max_rss_mib.value == pytest.approx(362.53125)
    assert "utilization.json" in zipcodes.max_rss_mib.source


def test_sweep_drawn_with_its_slo(full: Path) -> None:
    page, _ = _page(full)
    assert "SLO p99 50 ms" in page
    assert f"spring-mvc ({SWEEP_ID[:16]}): max sustainable 200 req/s; stopped: the audit judged the run at 1000 req/s " \
           "INVALID" in page


def test_clean_results_exit_0(tmp_path: Path) -> None:
    results = good_results(tmp_path / "results")
    done = perflab("report", "--results", results, "--output", tmp_path / "out.html")
    assert (done.returncode, done.stderr) == (report.EXIT_WRITTEN, "")
    assert "<h2 id=\"problems\">Problems (0)</h2><p>None: every run directory was read.</p>" in \
        (tmp_path / "out.html").read_text()


def test_a_wrk2_run_with_its_percentile_table_is_read(tmp_path: Path) -> None:
    run_dir = add_fixture_run(tmp_path, TABLE_RUN)
    run = next(r for r in report.load(tmp_path).runs if r.run_id == TABLE_RUN.run_id)
    assert run.readable and run.result is not None
    assert run.problems == ["no utilization.json: no Prometheus data for this run; utilization not recorded"]
    assert len(run.result.latency_corrected.spectrum) == 151  # the table's rows, not the text's 72
    (run_dir / "wrk2-measure-percentiles.json").write_text('{"format": "perflab-wrk2-percentiles/1"}')
    run = next(r for r in report.load(tmp_path).runs if r.run_id == TABLE_RUN.run_id)
    assert not run.readable
    assert run.problems[0] == ("percentile table wrk2-measure-percentiles.json is corrupt (the percentile table "
                               "has no 'errors' object); left out")


def test_a_run_of_the_retired_k6_is_left_out_with_the_reason(tmp_path: Path) -> None:
    run_dir = add_fixture_run(tmp_path, GOOD_RUNS[2])
    stored = json.loads((run_dir / "result.json").read_text())
    (run_dir / "result.json").write_text(json.dumps(stored | {"tool": "k6", "raw_output": "k6-measure-summary.json"}))
    (run,) = report.load(tmp_path).runs
    assert not run.readable
    assert run.problems[0] == "a k6 run: k6 was retired (AGPL) and its output is no longer read; left out"


def test_empty_results_directory_gives_an_empty_report(tmp_path: Path) -> None:
    done = perflab("report", "--results", tmp_path)
    assert (done.returncode, done.stderr) == (report.EXIT_WRITTEN, "")
    assert "No complete run yet" in (tmp_path / "report.html").read_text()


def test_no_report_without_a_results_directory(tmp_path: Path) -> None:
    done = perflab("report", "--results", tmp_path / "nothing")
    assert done.returncode == report.EXIT_NOT_WRITTEN
    assert done.stderr == (f"perflab: error: {tmp_path / 'nothing'}: no such results directory "
                           "(RESULTS=DIR or --results DIR chooses another)\n")
    done = perflab("report", "--results", tmp_path, "--output", tmp_path / "no-such-dir" / "r.html")
    assert done.returncode == report.EXIT_NOT_WRITTEN
    assert done.stderr.startswith("perflab: error: ") and "no report written" in done.stderr
    assert len(done.stderr.splitlines()) == 1


def test_make_report_accepts_listed_problems(full: Path, tmp_path: Path) -> None:
    """`make report RESULTS=...` writes RESULTS/report.html and succeeds when problems were only listed."""
    (full / "report.html").unlink(missing_ok=True)
    done = subprocess.run(["make", "--no-print-directory", "report", f"RESULTS={full}"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (full / "report.html").is_file()
    assert "perflab: report: 20260103T100000Z-quarkus-greeting: empty directory" in done.stderr
    done = subprocess.run(["make", "--no-print-directory", "report", f"RESULTS={tmp_path / 'nothing'}"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "no such results directory" in done.stderr
