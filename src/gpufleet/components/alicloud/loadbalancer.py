"""CLB in front of the nodes with an HTTP health check on the spec's path; HTTPS with load_balancer.tls (docs/tls.md).

CLB, not ALB: ESS attaches CLB instances natively (loadbalancer_ids) and checks their health to
replace nodes, the pay-by-CLCU instance fee is documented, and it mirrors Tencent's CLB one to one.
"""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud
from msgspec import Struct

from gpufleet.naming import Names
from gpufleet.stacks.spec import LoadBalancer as LoadBalancerSpec

# spec cipher_policy -> tls_cipher_policy (resource_alicloud_slb_listener.go: tls_cipher_policy_1_0 / 1_1 / 1_2 / 1_2_strict)
CIPHER_POLICIES = {"tls1.2": "tls_cipher_policy_1_2", "tls1.2-strict": "tls_cipher_policy_1_2_strict"}


class LoadBalancerArgs(Struct, frozen=True):
    """What the load balancer uses (built by program.load_balancer_args)."""

    names: Names
    lb: LoadBalancerSpec  # listener, health check, TLS, clients
    serving_port: int
    switch_id: pulumi.Input[str]  # an internal CLB's vSwitch
    prod: bool  # deletion protection
    weighted: bool  # the serving groups join through a VServer group with weights (weighted())
    tags: dict[str, str]


def tls_args(args: LoadBalancerArgs) -> dict:
    """The HTTPS listener's own arguments (the certificate id is added where it is known)."""
    tls = args.lb.tls
    if tls is None:
        return {"protocol": "http"}
    out = {"protocol": "https", "tls_cipher_policy": CIPHER_POLICIES[tls.cipher_policy]}
    if tls.certificate_id:
        out["server_certificate_id"] = tls.certificate_id
    return out


def redirect_args(args: LoadBalancerArgs) -> dict | None:
    """A port-80 HTTP listener that forwards to the HTTPS listener (listener_forward on, forward_port), when asked."""
    tls = args.lb.tls
    if tls is None or not tls.redirect_http:
        return None
    return {
        "protocol": "http",
        "frontend_port": 80,
        "listener_forward": "on",
        "forward_port": args.lb.listener_port,
    }


def protection_args(args: LoadBalancerArgs) -> dict:
    """Prod's CLB refuses deletion (delete_protection: on/off; only for pay-as-you-go CLBs, which these are)."""
    return {"delete_protection": "on" if args.prod else "off"}


def endpoint(lb: LoadBalancerSpec, address):
    if lb.tls is None:
        return pulumi.Output.concat("http://", address, ":", str(lb.listener_port))
    port = "" if lb.listener_port == 443 else f":{lb.listener_port}"
    return pulumi.Output.from_input(f"https://{lb.tls.domain}{port}")


def secret_config(key: str) -> pulumi.Output:
    namespace, name = key.split(":", 1)
    return pulumi.Config(namespace).require_secret(name)


def weighted(spec) -> bool:
    """Whether the serving groups join the listener through a VServer group with a weight per group (a rollout's two
    groups, and a fleet with a label: the group a rollout left). ESS attaches a scaling group to a CLB's default server
    group with no weight argument in pulumi-alicloud 4.0.0 (ScalingGroup loadbalancer_ids; the scaling configuration's
    LoadBalancerWeight, 1-100, is not in its schema), while AttachVServerGroups takes a weight 0-100 per group
    (alibabacloud_ess20220222 1.13.3 AttachVServerGroupsRequest VServerGroupAttributes.Weight: "Valid values: 0 to
    100"). A fleet without label or rollout keeps the default server group it was created with."""
    return spec.label is not None or spec.rollout is not None


def listener_args(args: LoadBalancerArgs) -> dict:
    lb, hc = args.lb, args.lb.health_check
    return {
        **tls_args(args),
        "frontend_port": lb.listener_port,
        "backend_port": args.serving_port,
        "bandwidth": -1,
        "scheduler": "wrr",
        "sticky_session": "off",
        "health_check": "on",
        "health_check_type": "http",
        "health_check_uri": hc.path,
        "health_check_connect_port": args.serving_port,
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
    def __init__(self, name: str, args: LoadBalancerArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:alicloud:LoadBalancer", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        physical, tags, lb = args.names, args.tags, args.lb
        self.clb = alicloud.slb.ApplicationLoadBalancer(
            f"{name}-clb",
            load_balancer_name=physical(f"{name}-clb"),
            address_type="internet" if lb.public else "intranet",
            vswitch_id=None if lb.public else args.switch_id,
            instance_charge_type="PayByCLCU",
            internet_charge_type="PayByTraffic",
            tags=tags,
            **protection_args(args),
            opts=child,
        )
        listener = listener_args(args)
        if lb.tls is not None and lb.tls.certificate_id is None:
            cert_key, private_key_key = lb.tls.certificate_config, lb.tls.private_key_config
            assert cert_key is not None and private_key_key is not None  # Tls._one_source: no id means both PEM keys
            self.certificate = alicloud.slb.ServerCertificate(
                f"{name}-cert",
                name=physical(f"{name}-cert"),
                server_certificate=secret_config(cert_key),
                private_key=secret_config(private_key_key),
                opts=child,
            )
            listener["server_certificate_id"] = self.certificate.id
        acl_id = None
        if listener["acl_status"] == "on":
            acl = alicloud.slb.Acl(f"{name}-clients", name=physical(f"{name}-clients"), opts=child)
            for i, cidr in enumerate(lb.allowed_cidrs):
                alicloud.slb.AclEntryAttachment(f"{name}-client-{i}", acl_id=acl.id, entry=cidr, comment="client", opts=child)
            acl_id = acl.id
        self.server_group = None
        if args.weighted:
            # the VServer group the serving groups attach to with their weights (scaling.py); the listener sends to it
            self.server_group = alicloud.slb.ServerGroup(
                f"{name}-serving", load_balancer_id=self.clb.id, name=physical(f"{name}-serving"), opts=child
            )
            listener["server_group_id"] = self.server_group.id
        self.listener = alicloud.slb.Listener(
            f"{name}-listener",
            load_balancer_id=self.clb.id,
            acl_ids=[acl_id] if acl_id else None,  # acl_id is deprecated since provider 1.249.0
            acl_type="white" if acl_id else None,
            opts=child,
            **listener,
        )
        redirect = redirect_args(args)
        if redirect:
            alicloud.slb.Listener(
                f"{name}-redirect",
                load_balancer_id=self.clb.id,
                acl_ids=[acl_id] if acl_id else None,
                acl_type="white" if acl_id else None,
                acl_status=listener["acl_status"],
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.listener]),
                **redirect,
            )
        self.endpoint = endpoint(lb, self.clb.address)
        self.register_outputs({"endpoint": self.endpoint})
