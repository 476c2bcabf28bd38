"""The Tencent scaler's decision at its thresholds: scale out only *above* GPUFLEET_SCALE_OUT_ABOVE and in only
*below* GPUFLEET_SCALE_IN_BELOW (index.py's module doc; docs/scaling.md "queue > 4 waiting per node"), as Alibaba's
ESS alarms compare the same signal with ">" and "<": at exactly a threshold both clouds hold."""

from __future__ import annotations

import pytest

from gpufleet import plan
from gpufleet.components.tencentcloud.scaler import index


@pytest.mark.parametrize(
    ("values", "want"),
    [
        ({"10.0.0.1": 4.0}, "hold"),  # at the scale-out threshold
        ({"10.0.0.1": 3.0, "10.0.0.2": 5.0}, "hold"),  # average (3 + 5) / 2 = 4, at it
        ({"10.0.0.1": 4.5}, "out"),
        ({"10.0.0.1": 0.5}, "hold"),  # at the scale-in threshold
        ({"10.0.0.1": 0.0, "10.0.0.2": 1.0}, "hold"),  # average 0.5, at it
        ({"10.0.0.1": 0.25}, "in"),
    ],
)
def test_the_scaler_holds_at_its_thresholds(values, want):
    assert index.decide(values, 4, 0.5)[0] == want


def test_alibaba_compares_the_same_signal_strictly():
    inputs = [
        r["inputs"] for r in plan.for_stack("alicloud-cn-hangzhou-prod").resources if r["type"] == "alicloud:ess/alarm:Alarm"
    ]
    (out,) = [a for a in inputs if a.get("metricName") == "vllm_requests_waiting"]
    (scale_in,) = [a for a in inputs if "expressions" in a]
    assert (out["comparisonOperator"], float(out["threshold"])) == (">", 4.0)
    waiting = next(e for e in scale_in["expressions"] if e["metricName"] == "vllm_requests_waiting")
    assert (waiting["comparisonOperator"], waiting["threshold"]) == ("<", 0.5)
