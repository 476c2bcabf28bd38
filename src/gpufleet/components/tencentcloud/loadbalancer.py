"""CLB in front of the nodes: a TCP listener with an HTTP health check on the spec's path, or with
load_balancer.tls an HTTPS listener with one rule (the tls domain, url /) that carries the HTTP health check.

Without TLS, a layer-4 listener: its health check is set on the listener itself, the scaling group attaches to it
without a rule id, and token streams pass without an HTTP proxy in between.

With TLS, HTTPS + a rule, not TCP_SSL: the pinned provider (v1.82.42, clb/service_tencentcloud_clb.go
checkHealthCheckPara) accepts health_check_http_path / _http_code / _http_method only on HTTP/HTTPS rules or a TCP
listener whose check type is HTTP, so a TCP_SSL listener could only run a TCP (port-open) check, which passes while
vLLM is still loading or down behind the gateway. The rule keeps the HTTP check on /health; the scaling group
attaches to the listener and the rule (forward_balancer_ids rule_id). See docs/tls.md.
"""

from __future__ import annotations

import pulumi
import tencentcloud_iac_pulumi as tencentcloud
from msgspec import Struct

from gpufleet.naming import Names
from gpufleet.stacks.spec import LoadBalancer as LoadBalancerSpec


class LoadBalancerArgs(Struct, frozen=True):
    """What the load balancer uses (built by program.load_balancer_args)."""

    names: Names
    lb: LoadBalancerSpec  # listener, health check, TLS
    serving_port: int
    vpc_id: pulumi.Input[str]
    subnet_id: pulumi.Input[str]  # an internal CLB's subnet
    security_group_id: pulumi.Input[str]  # the CLB's own group (security.py)
    prod: bool  # deletion protection
    tags: dict[str, str]


def https_listener_args(lb: LoadBalancerSpec) -> dict:
    """The HTTPS listener: certificate only (scheduler, target type and health check live on the rule)."""
    tls = lb.tls
    assert tls is not None  # called only for a spec with tls
    args = {"protocol": "HTTPS", "port": lb.listener_port, "certificate_ssl_mode": "UNIDIRECTIONAL"}
    if tls.certificate_id:
        args["certificate_id"] = tls.certificate_id
    return args


def rule_args(lb: LoadBalancerSpec) -> dict:
    """The HTTPS listener's one rule: every path of the tls domain, with the HTTP health check on the spec's path."""
    hc = lb.health_check
    assert lb.tls is not None  # called only for a spec with tls
    return {
        "domain": lb.tls.domain,
        "url": "/",
        "forward_type": "HTTP",
        "scheduler": "WRR",
        "target_type": "NODE",
        "health_check_switch": True,
        "health_check_type": "HTTP",
        "health_check_http_path": hc.path,
        "health_check_http_method": "GET",
        "health_check_http_code": 2,  # http_2xx
        "health_check_interval_time": hc.interval_s,
        "health_check_time_out": hc.timeout_s,
        "health_check_health_num": hc.healthy_threshold,
        "health_check_unhealth_num": hc.unhealthy_threshold,
        "health_source_ip_type": 1,  # checks come from 100.64.0.0/10, which the node group admits
    }


def endpoint(lb: LoadBalancerSpec, vip):
    if lb.tls is None:
        return pulumi.Output.concat("http://", vip, ":", str(lb.listener_port))
    port = "" if lb.listener_port == 443 else f":{lb.listener_port}"
    return pulumi.Output.from_input(f"https://{lb.tls.domain}{port}")


def listener_args(lb: LoadBalancerSpec, serving_port: int) -> dict:
    hc = lb.health_check
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
        "health_check_port": serving_port,
        "health_check_interval_time": hc.interval_s,
        "health_check_time_out": hc.timeout_s,
        "health_check_health_num": hc.healthy_threshold,
        "health_check_unhealth_num": hc.unhealthy_threshold,
        "health_source_ip_type": 1,  # checks come from 100.64.0.0/10, which the node group admits
        "idle_connect_timeout": 900,
    }


class LoadBalancer(pulumi.ComponentResource):
    def __init__(self, name: str, args: LoadBalancerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:tencentcloud:LoadBalancer", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        physical, tags, lb = args.names, args.tags, args.lb
        self.clb = tencentcloud.clb.Instance(
            f"{name}-clb",
            clb_name=physical(f"{name}-clb"),
            network_type="OPEN" if lb.public else "INTERNAL",
            vpc_id=args.vpc_id,
            subnet_id=None if lb.public else args.subnet_id,
            security_groups=[args.security_group_id],
            load_balancer_pass_to_target=True,
            internet_charge_type="TRAFFIC_POSTPAID_BY_HOUR" if lb.public else None,
            delete_protect=args.prod,
            tags=tags,
            opts=child,
        )
        self.rule = None
        if lb.tls is None:
            listener = listener_args(lb, args.serving_port)
        else:
            listener = https_listener_args(lb)
            if lb.tls.certificate_id is None:
                cert_key, private_key_key = lb.tls.certificate_config, lb.tls.private_key_config
                assert cert_key is not None and private_key_key is not None  # Tls._one_source: no id means both PEM keys
                namespace, cert = cert_key.split(":", 1)
                key_ns, key = private_key_key.split(":", 1)
                self.certificate = tencentcloud.ssl.Certificate(
                    f"{name}-cert",
                    name=physical(f"{name}-cert"),
                    type="SVR",
                    # ssl/resource_tc_ssl_certificate.go refuses a leading or trailing newline, which PEM files end with
                    cert=pulumi.Config(namespace).require_secret(cert).apply(str.strip),
                    key=pulumi.Config(key_ns).require_secret(key).apply(str.strip),
                    tags=tags,
                    opts=child,
                )
                listener["certificate_id"] = self.certificate.id
        self.listener = tencentcloud.clb.Listener(
            f"{name}-listener", clb_id=self.clb.id, listener_name=physical(f"{name}-listener"), opts=child, **listener
        )
        if lb.tls is not None:
            self.rule = tencentcloud.clb.ListenerRule(
                f"{name}-rule", clb_id=self.clb.id, listener_id=self.listener.listener_id, opts=child, **rule_args(lb)
            )
        self.endpoint = endpoint(lb, self.clb.clb_vips[0])
        self.register_outputs({"endpoint": self.endpoint})
