"""Report 2 on the local lab, through `make reproduce REPORT=2` (the checks: labkit.report_2_reproduced).

This is `make test-reproduce`, for a lab that is up (PERFLAB_TEST_REUSE_LAB=1) or from nothing, on
the local lab or any other (PERFLAB_TEST_INVENTORY, PERFLAB_TEST_LAB=ssh). make test leaves it out:
its arms must hold their rate, which needs the machine to itself, and after the rest it took CI past
its 90 minutes."""
from __future__ import annotations

from labkit import report_2_reproduced


def test_report_2_the_thread_cap_is_reproduced_and_attributed_to_the_request_threads(lab: str) -> None:
    report_2_reproduced()
