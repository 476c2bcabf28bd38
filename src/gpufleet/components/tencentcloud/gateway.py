"""How a client's address reaches the node's gateway through Tencent's load balancer (docs/gateway.md).

Without TLS the fleet's CLB listener is TCP (layer 4); with `load_balancer.tls` it is HTTPS (layer 7) with one rule
(components/tencentcloud/loadbalancer.py). Both pass the client's own address to the node as the connection's source:
layer-4 listeners always ("For layer-4 CLB, the source IP address obtained on the backend CVM instance is the client
IP address"), layer-7 listeners while the CLB uses non-persistent connections to the backends, its default ("For
layer-7 CLB, when a non-persistent connection is used between the CLB instance and the real server, the source IP
address obtained on the backend CVM instance is the client IP address"): https://tencentcloud.com/document/product/214/3728
(updated 2024-01-04, read 2026-12-03); also https://www.tencentcloud.com/document/product/214/70455. The program
never turns on the listener's backend keep-alive, so the gateway trusts no proxy and keys the rate limit on the
connection's source address; any X-Forwarded-For a node receives is the client's own words.
"""

TRUSTED_PROXIES: tuple[str, ...] = ()
