"""A client's burst is served at once, not spread out at the rate: the gateway's limit_req has `nodelay`.

nginx docs, ngx_http_limit_req_module: excess requests within the burst "are delayed such that requests are processed at
a defined rate"; "If delaying of excessive requests while requests are being limited is not desired, the parameter
nodelay should be used". At 6 requests a minute (one per 10 s) with burst 2, three requests in a row are answered
at once (an LLM request that waited 10 s at the gateway would eat the load balancer's timeout), the fourth is 429.
"""

from __future__ import annotations

import time

import httpx
from conftest import KEY

AUTH = {"Authorization": f"Bearer {KEY}"}


def test_a_burst_is_answered_without_delay_and_past_it_refused(run_nginx):
    n = run_nginx(rate_per_minute=6, burst=2)
    start = time.monotonic()
    codes = [httpx.get(n.url("/v1/models"), headers=AUTH, timeout=30).status_code for _ in range(3)]
    took = time.monotonic() - start
    assert codes == [200, 200, 200]
    assert took < 5, f"the burst took {took:.1f} s: delayed at the rate (10 s a request) instead of served"
    assert httpx.get(n.url("/v1/models"), headers=AUTH).status_code == 429
