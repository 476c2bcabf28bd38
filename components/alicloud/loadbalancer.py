"""CLB in front of the nodes with an HTTP health check on the spec's path.

CLB, not ALB: ESS attaches CLB instances natively (loadbalancer_ids) and checks their health to
replace nodes, the pay-by-CLCU instance fee is documented, and it mirrors Tencent's CLB one to one.
"""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud
from gpufleet.stacks.loader import Fleet


def listener_args(fleet: Fleet) -> dict:
    lb, hc = fleet.spec.load_balancer, fleet.spec.load_balancer.health_check
    return {
        "protocol": "http",
        "frontend_port": lb.listener_port,
        "backend_port": fleet.spec.serving.port,
        "bandwidth": -1,
        "scheduler": "wrr",
        "sticky_session": "off",
        "health_check": "on",
        "health_check_type": "http",
        "health_check_uri": hc.path,
        "health_check_connect_port": fleet.spec.serving.port,
        "health_check_http_code": "http_2xx",
        "health_check_interval": hc.interval_s,
        "health_check_timeout": hc.timeout_s,
        "healthy_threshold": hc.healthy_threshold,
        "unhealthy_threshold": hc.unhealthy_threshold,
        "request_timeout": lb.request_timeout_s,
        "idle_timeout": 60,
        "acl_status": "on" if lb.allowed_cidrs != ["0.0.0.0/0"] else "off",
    }


class LoadBalancer(pulumi.ComponentResource):
    def __init__(self, name: str, fleet: Fleet, switch_id, tags: dict, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:alicloud:LoadBalancer", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        lb = fleet.spec.load_balancer
        self.clb = alicloud.slb.ApplicationLoadBalancer(
            f"{name}-clb",
            load_balancer_name=f"{name}-clb",
            address_type="internet" if lb.public else "intranet",
            vswitch_id=None if lb.public else switch_id,
            instance_charge_type="PayByCLCU",
            internet_charge_type="PayByTraffic",
            tags=tags,
            opts=child,
        )
        args = listener_args(fleet)
        acl_id = None
        if args["acl_status"] == "on":
            acl = alicloud.slb.Acl(f"{name}-clients", name=f"{name}-clients", opts=child)
            for i, cidr in enumerate(lb.allowed_cidrs):
                alicloud.slb.AclEntryAttachment(f"{name}-client-{i}", acl_id=acl.id, entry=cidr, comment="client", opts=child)
            acl_id = acl.id
        self.listener = alicloud.slb.Listener(
            f"{name}-listener",
            load_balancer_id=self.clb.id,
            acl_ids=[acl_id] if acl_id else None,  # acl_id is deprecated since provider 1.249.0
            acl_type="white" if acl_id else None,
            opts=child,
            **args,
        )
        public_ip = self.clb.address
        self.endpoint = pulumi.Output.concat("http://", public_ip, ":", str(lb.listener_port))
        self.register_outputs({"endpoint": self.endpoint})
