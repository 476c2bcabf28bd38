"""The client address behind a chain of trusted proxies is the last untrusted one in X-Forwarded-For.

nginx docs, ngx_http_realip_module, real_ip_recursive: "If recursive search is enabled, the original client address
that matches one of the trusted addresses is replaced by the last non-trusted address sent in the request header
field" (off: by the last address, trusted or not). The gateway logs $remote_addr and keys its rate limit on it, so
with a second trusted hop in the chain the client must still be the one seen.
"""

from __future__ import annotations

import httpx
from conftest import KEY

AUTH = {"Authorization": f"Bearer {KEY}"}


def test_a_trusted_hop_in_forwarded_for_is_skipped_to_the_client(run_nginx):
    n = run_nginx(trusted_proxies=("127.0.0.0/8",))
    # sent from 127.0.0.1 (trusted); the header's last entry, 127.0.0.9, is trusted too: the client is 198.51.100.7
    r = httpx.get(n.url("/v1/models"), headers={**AUTH, "X-Forwarded-For": "203.0.113.5, 198.51.100.7, 127.0.0.9"})
    assert r.status_code == 200
    n.stop()
    (line,) = n.access_log.read_text().splitlines()
    assert line.split()[0] == "198.51.100.7", line
