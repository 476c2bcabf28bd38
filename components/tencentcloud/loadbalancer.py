"""CLB in front of the nodes: a TCP listener with an HTTP health check on the spec's path.

A layer-4 listener: its health check is set on the listener itself (a layer-7 one needs a rule per URL),
the scaling group attaches to it without a rule id, and token streams pass without an HTTP proxy in between.
"""

from __future__ import annotations

import pulumi
import tencentcloud_iac_pulumi as tencentcloud
from gpufleet.stacks.loader import Fleet


def listener_args(fleet: Fleet) -> dict:
    lb, hc = fleet.spec.load_balancer, fleet.spec.load_balancer.health_check
    return {
        "protocol": "TCP",
        "port": lb.listener_port,
        "scheduler": "WRR",
        "target_type": "NODE",
        "health_check_switch": True,
        "health_check_type": "HTTP",
        "health_check_http_path": hc.path,
        "health_check_http_method": "GET",
        "health_check_http_version": "HTTP/1.1",
        "health_check_http_code": 2,  # http_2xx
        "health_check_port": fleet.spec.serving.port,
        "health_check_interval_time": hc.interval_s,
        "health_check_time_out": hc.timeout_s,
        "health_check_health_num": hc.healthy_threshold,
        "health_check_unhealth_num": hc.unhealthy_threshold,
        "health_source_ip_type": 1,  # checks come from 100.64.0.0/10, which the node group admits
        "idle_connect_timeout": 900,
    }


class LoadBalancer(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        fleet: Fleet,
        vpc_id,
        subnet_id,
        security_group_id,
        tags: dict,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("gpufleet:tencentcloud:LoadBalancer", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        lb = fleet.spec.load_balancer
        self.clb = tencentcloud.clb.Instance(
            f"{name}-clb",
            clb_name=f"{name}-clb",
            network_type="OPEN" if lb.public else "INTERNAL",
            vpc_id=vpc_id,
            subnet_id=None if lb.public else subnet_id,
            security_groups=[security_group_id],
            load_balancer_pass_to_target=True,
            internet_charge_type="TRAFFIC_POSTPAID_BY_HOUR" if lb.public else None,
            delete_protect=fleet.spec.environment == "prod",
            tags=tags,
            opts=child,
        )
        self.listener = tencentcloud.clb.Listener(
            f"{name}-listener", clb_id=self.clb.id, listener_name=f"{name}-listener", opts=child, **listener_args(fleet)
        )
        self.endpoint = pulumi.Output.concat("http://", self.clb.clb_vips[0], ":", str(lb.listener_port))
        self.register_outputs({"endpoint": self.endpoint})
