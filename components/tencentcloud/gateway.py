"""How a client's address reaches the node's gateway through Tencent's load balancer (docs/gateway.md).

The fleet's CLB listener is TCP (layer 4, components/tencentcloud/loadbalancer.py). Layer-4 CLB listeners pass the
client's address through as the connection's source address, with no configuration on the backend ("Layer-4
listeners (TCP/UDP/TCP SSL/QUIC) of CLB support obtaining the real client IP addresses directly from the real
servers": https://www.tencentcloud.com/document/product/214/70455, and
https://tencentcloud.com/document/product/214/3728, read 2026-12-03). A TCP listener does not parse HTTP, so any
X-Forwarded-For the node receives was written by the client: the gateway trusts no proxy and keys the rate limit on
the connection's source address.
"""

TRUSTED_PROXIES: tuple[str, ...] = ()
