"""The node agent never sends an instance-metadata token past its lifetime.

Alibaba ECS hardened metadata mode: PUT /latest/api/token with X-aliyun-ecs-metadata-token-ttl-seconds gives a token
valid for that many seconds (1-21600); a GET with an expired token is refused (403). The agent asks for
metadata_token_ttl_s (300, images/node_agent.yaml) and must ask again before those 300 s are over: a spot watcher
holding an expired token would miss the reclaim notice.
"""

from __future__ import annotations

from types import SimpleNamespace

from gpufleet.images import node_agent

MD = {
    "url": "http://metadata.invalid",
    "token_url": "http://metadata.invalid/latest/api/token",
    "token_ttl_header": "X-aliyun-ecs-metadata-token-ttl-seconds",
    "token_header": "X-aliyun-ecs-metadata-token",
}


def test_a_token_is_reused_within_its_lifetime_and_asked_again_before_it_ends(monkeypatch):
    clock = {"now": 1000.0}
    puts: list[float] = []

    def http(url, *, timeout, method="GET", data=None, headers=None):
        if method == "PUT":
            assert headers == {"X-aliyun-ecs-metadata-token-ttl-seconds": "300"}
            puts.append(clock["now"])
            return 200, f"tk-{len(puts)}"
        return 200, headers["X-aliyun-ecs-metadata-token"]  # echo the token the GET carried

    monkeypatch.setattr(node_agent, "http", http)
    monkeypatch.setattr(node_agent, "time", SimpleNamespace(monotonic=lambda: clock["now"]))
    md = node_agent.Metadata(MD, timeout=2, token_ttl_s=300)

    used = {}
    for t in (0, 60, 120, 301, 400):
        clock["now"] = 1000.0 + t
        used[t] = md.get("/latest/meta-data/instance-id")[1]
    # one token for the first 2 minutes; at 301 s the first has expired (300 s), so a new one was asked before then
    assert used[0] == used[60] == used[120] == "tk-1"
    assert used[301] != "tk-1"
    assert puts[:2] == [1000.0, 1301.0]
