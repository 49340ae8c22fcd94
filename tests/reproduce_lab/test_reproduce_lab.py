"""Report 2 on the local lab, through `make reproduce REPORT=2` (the checks: labkit.report_2_reproduced).

CI runs the same experiment on the SSH lab, with two loadgen hosts (tests/ssh_lab), beside the local
lab's tests; this is `make test-reproduce`, for a lab that is up (PERFLAB_TEST_REUSE_LAB=1) or from
nothing."""
from __future__ import annotations

from labkit import report_2_reproduced


def test_report_2_the_thread_cap_is_reproduced_and_attributed_to_the_request_threads(lab: str) -> None:
    report_2_reproduced()
