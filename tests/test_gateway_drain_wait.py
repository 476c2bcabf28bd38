"""How long a draining node waits for the load balancer to stop sending: interval_s x unhealthy_threshold.

A load balancer marks a backend down after `unhealthy_threshold` consecutive failed health checks, one every
`interval_s` (Alibaba CLB slb_listener unhealthy_threshold / health_check_interval; Tencent CLB HealthCheck.UnHealthNum
/ IntervalTime); `healthy_threshold` counts successes before a backend comes back and has no part in it
(stacks/spec.py autoscaling.drain_timeout_s: "interval_s x unhealthy_threshold ... 660 = 15 + 600").
"""

from gpufleet.components import userdata
from gpufleet.images import gateway
from gpufleet.validation import load_fleet


def test_prod_waits_three_failed_checks_five_seconds_apart():
    fleet = load_fleet("alicloud-cn-hangzhou-prod", sizing=False)
    hc = fleet.spec.load_balancer.health_check
    # the stack file: interval_s 5, healthy_threshold 2, unhealthy_threshold 3 -> 5 x 3 = 15 s
    assert (hc.interval_s, hc.healthy_threshold, hc.unhealthy_threshold) == (5, 2, 3)
    env = gateway.parse_env(userdata.gateway_env_text(fleet))
    assert env["GATEWAY_DRAIN_WAIT_S"] == "15"
