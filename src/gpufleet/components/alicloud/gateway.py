"""How a client's address reaches the node's gateway through Alibaba's load balancer (docs/gateway.md).

The fleet's CLB listener is HTTP (layer 7, components/alicloud/loadbalancer.py): the connection the node sees comes
from the CLB's own addresses, and the client's address arrives in X-Forwarded-For, which CLB layer-7 listeners
always add ("CLB七层监听默认开启通过X-Forwarded-For头字段获取客户端真实IP功能,不支持关闭":
https://help.aliyun.com/zh/slb/classic-load-balancer/use-cases/preserve-client-ip-addresses-when-layer-7-listeners-are-used,
read 2026-12-03). CLB reaches backends from 100.64.0.0/10, a range Alibaba reserves and never assigns to users
(https://www.alibabacloud.com/help/en/slb/classic-load-balancer/user-guide/faq-about-health-checks, read 2026-12-03).
So the gateway trusts X-Forwarded-For only on connections from 100.64.0.0/10, and takes the right-most address
that is not in it (nginx realip, real_ip_recursive on): a client cannot pick its own rate-limit key.
"""

TRUSTED_PROXIES: tuple[str, ...] = ("100.64.0.0/10",)
