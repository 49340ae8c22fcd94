"""The requests the loadgen sent, by type and third of the window (perflab/sent.py): what the mix and the
statements per request are counted on for an app that counts no requests of its own (Spring PetClinic)."""
from __future__ import annotations

import json

import pytest

from perflab import observe, sent
from perflab.rundir import ScenarioExpect, ScenarioRequest
from perflab.vegeta import Attack, Result

SEARCH = ScenarioRequest(name="search_owners", weight=3, method="GET", path="/owners?lastName=${last_name}",
                         expect=ScenarioExpect(status=200), statements={"select": 3})
DETAILS = ScenarioRequest(name="owner_details", weight=3, method="GET", path="/owners/${owner}",
                          expect=ScenarioExpect(status=200), statements={"select": 4})
NEW = ScenarioRequest(name="new_owner", weight=1, method="POST", path="/owners/new", expect=ScenarioExpect(status=302),
                      statements={"insert": 1})
REQUESTS = (SEARCH, DETAILS, NEW)


def wrk2_output(names: list[str], seconds: list[tuple[int, list[int]]]) -> str:
    """A wrk2 output's end as perflab/wrk2_scenario.lua's done() writes it."""
    totals = " ".join(f"{name}={sum(row[i] for _, row in seconds)}" for i, name in enumerate(names))
    return ("  Latency Distribution (HdrHistogram - Recorded Latency)\n"
            f"perflab wrk2 requests by operation: {totals}\n"
            f"perflab wrk2 requests by second: {json.dumps({'names': names, 'seconds': seconds})}\n")


def test_wrk2s_seconds_of_every_host_are_summed_into_the_thirds_of_the_window() -> None:
    names = ["search_owners", "owner_details", "new_owner"]
    # A 30 s window from 1000: seconds 1000..1009 the first third, 1010..1019 the second, 1020..1029 the last;
    # a second sent a moment before the start counts in the first, one at the end in the last.
    first = wrk2_output(names, [(999, [1, 0, 0]), *((s, [3, 3, 1]) for s in range(1000, 1030)), (1030, [0, 1, 0])])
    second = wrk2_output(names, [(s, [3, 3, 0 if s >= 1020 else 1]) for s in range(1000, 1030)])
    found = sent.from_wrk2([first, second], REQUESTS, 1000.0, 30.0)
    search, details, new = (("GET", "/owners", "200"), ("GET", "/owners/{owner}", "200"), ("POST", "/owners/new", "302"))
    assert found.thirds == ({search: 61, details: 60, new: 20}, {search: 60, details: 60, new: 20},
                            {search: 60, details: 61, new: 10})
    assert found.moments()[0] == {} and found.moments()[-1] == {search: 181, details: 181, new: 50}
    assert "wrk2" in found.counted_by and "2 loadgen host(s)" in found.counted_by
    assert found.counts() == found.moments()[-1]


def test_what_wrk2_sent_without_waiting_for_its_answer_is_counted_apart() -> None:
    # 412 sent, 404 answered: the 8 in flight when wrk2 stopped ran none, some or all of their statements.
    output = wrk2_output(["search_owners", "new_owner"], [(1000, [200, 0]), (1001, [200, 12])])
    found = sent.from_wrk2([output], REQUESTS, 1000.0, 2.0, answered=404)
    assert found.counts()[sent.UNANSWERED] == 8 and sent.UNANSWERED not in found.moments()[-1]
    # More than 1% of the requests: no statements are expected of them (same_db_work is not evaluated, not failed).
    expected, why = observe.expected_statements(found.counts(), observe.statements_table(REQUESTS))
    assert expected is None
    assert why == ("8 of 412 requests ended without an answer (e.g. 8 sent by wrk2 unanswered when it stopped), more "
                   "than 1%: what they ran cannot be told")
    expected, _ = observe.expected_statements(sent.from_wrk2([output], REQUESTS, 1000.0, 2.0, answered=410).counts(),
                                              observe.statements_table(REQUESTS))
    assert expected is not None and expected.select == pytest.approx(3 * 400 / 412)


def test_wrk2_without_its_seconds_says_why() -> None:
    only = ScenarioRequest(name="greeting", weight=1, method="GET", path="/hello", expect=ScenarioExpect(status=200))
    with pytest.raises(sent.NotCounted, match="one fixed request is left to wrk2 itself"):
        sent.from_wrk2(["Running 30s test\n"], [only], 1000.0, 30.0)
    with pytest.raises(sent.NotCounted, match="host 2 has no line 'perflab wrk2 requests by second:'"):
        sent.from_wrk2([wrk2_output(["new_owner"], [(1000, [1])]), "Running 30s test\n"], REQUESTS, 1000.0, 30.0)
    with pytest.raises(sent.NotCounted, match="does not hold \\(greeting\\)"):
        sent.from_wrk2([wrk2_output(["greeting"], [(1000, [5])])], REQUESTS, 1000.0, 30.0)


def result(seq: int, at_s: float, method: str, url: str, code: int = 200) -> Result:
    return Result(seq=seq, code=code, timestamp_ns=int(at_s * 1e9), latency_ns=1_000_000, bytes_in=10, error="",
                  method=method, url=url)


def test_vegetas_results_are_each_the_type_whose_template_their_url_fits() -> None:
    base = "http://app.lab:8080"
    results = (result(0, 1000.1, "GET", f"{base}/owners?lastName=Davis"), result(1, 1000.2, "GET", f"{base}/owners/4"),
               result(2, 1015.0, "POST", f"{base}/owners/new", 302), result(3, 1029.9, "GET", f"{base}/owners/10"),
               result(4, 1030.2, "GET", f"{base}/owners?lastName=E"), result(5, 1015.0, "POST", f"{base}/owners/new"))
    found = sent.from_vegeta([Attack(results)], REQUESTS, 1000.0, 30.0)
    assert found.thirds == ({("GET", "/owners", "200"): 1, ("GET", "/owners/{owner}", "200"): 1},
                            {("POST", "/owners/new", "302"): 1, ("POST", "/owners/new", "200"): 1},
                            {("GET", "/owners/{owner}", "200"): 1, ("GET", "/owners", "200"): 1})
    # Each by the status it was answered with: a new owner answered 200 (a redirect followed, the form refused)
    # costs what the scenario does not say, and no statements are expected of the run.
    expected, why = observe.expected_statements(found.counts(), observe.statements_table(REQUESTS))
    assert expected is None and why == ("neither the scenario's requests nor the contract give a statement count for "
                                        "POST /owners/new answered 200")
    # A URL no template fits, or several: the requests cannot be told apart.
    with pytest.raises(sent.NotCounted, match="vegeta sent GET /pets/1, which no request of the scenario fits"):
        sent.from_vegeta([Attack((result(0, 1000.0, "GET", f"{base}/pets/1"),))], REQUESTS, 1000.0, 30.0)
    any_owner = ScenarioRequest(name="any", weight=1, method="GET", path="/owners${rest}", expect=ScenarioExpect(status=200))
    with pytest.raises(sent.NotCounted, match="several requests of the scenario fit"):
        sent.from_vegeta([Attack((result(0, 1000.0, "GET", f"{base}/owners/4"),))], (DETAILS, any_owner), 1000.0, 30.0)
    with pytest.raises(sent.NotCounted, match="name no request's method and URL"):
        sent.from_vegeta([Attack((result(0, 1000.0, "", ""),))], REQUESTS, 1000.0, 30.0)


def test_a_template_fits_the_paths_sent_from_it_only() -> None:
    pattern = sent.template_pattern("/owners?lastName=${last_name}&price=$$${price}")
    assert pattern.fullmatch("/owners?lastName=Da&price=$12")
    assert not pattern.fullmatch("/owners/4") and not pattern.fullmatch("/ownersXlastName=Da&price=$1")
