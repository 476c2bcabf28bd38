"""How a client's address reaches the node's gateway on the fake cloud: its load balancer passes the connection
through (as a layer-4 listener does), so no proxy's X-Forwarded-For is trusted."""

TRUSTED_PROXIES: tuple[str, ...] = ()
