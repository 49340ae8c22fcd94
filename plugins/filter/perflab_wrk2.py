"""wrk2's calibration window for the loadgen role, from its one statement in perflab/wrk2.py.

`{{ connections | wrk2_calibration_ms(threads) }}`: the milliseconds a wrk2 invocation with that many
connections and threads runs before it records (roles/loadgen/vars/main.yml lengthens the measured
invocation by them and hands them to the done() hook, roles/loadgen/files/wrk2/perflab.lua).
`{{ connections | wrk2_calibration_s(threads) }}`: the same in whole seconds, rounded up, what the measured
invocation's -d adds to DURATION.
"""
from __future__ import annotations

from typing import Any, Callable

from perflab import wrk2


def wrk2_calibration_ms(connections: Any, threads: Any) -> int:
    return wrk2.calibration_ms(int(connections), int(threads))


def wrk2_calibration_s(connections: Any, threads: Any) -> int:
    return wrk2.calibration_s(int(connections), int(threads))


class FilterModule:
    def filters(self) -> dict[str, Callable[..., int]]:
        return {"wrk2_calibration_ms": wrk2_calibration_ms, "wrk2_calibration_s": wrk2_calibration_s}
