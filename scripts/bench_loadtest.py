"""Benchmark of the load-test client's own ceiling, as a ratio against a floor (not a timed test).

    .venv/bin/python scripts/bench_loadtest.py [--requests 400] [--concurrency 16] [--runs 3]

Against the test suite's fake OpenAI server with no artificial delay, it compares the requests/s that
`gpufleet.sizing.loadtest` reaches with those of the floor: a bare httpx loop sending the same streaming
requests and reading the stream to its end, without timing, parsing or bookkeeping. A ratio near 1 means
the measurement adds little; a server that is faster than the floor cannot be measured by this client
(then run several load generators, or measure fewer requests in flight).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "sizing"))

from fake_openai import Behaviour, FakeServer  # noqa: E402

from gpufleet.sizing import loadtest  # noqa: E402


async def floor(s: loadtest.Settings, concurrency: int) -> float:
    """Requests/s of the barest client: the same requests, the stream read and thrown away."""
    left = s.requests

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            async with client.stream("POST", s.endpoint, json=s.body(), headers=s.headers()) as resp:
                async for _ in resp.aiter_bytes():
                    pass

    start = time.perf_counter()
    async with httpx.AsyncClient(trust_env=False) as client:
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
    return s.requests / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with FakeServer(Behaviour(first_token_s=0.0, token_s=0.0, tokens=16)) as srv:
        s = loadtest.settings(
            url=srv.url,
            model="fake-model",
            concurrency=str(args.concurrency),
            requests=args.requests,
            max_tokens=16,
            api_key_env=None,
            slo_p95_ms=None,
            timeout_s=30,
            max_duration_s=300,
            prompt=None,
            environ={},
        )
        ours, bare = [], []
        for _ in range(args.runs):
            bare.append(asyncio.run(floor(s, args.concurrency)))
            ours.append(asyncio.run(loadtest.run(s))["levels"][0]["requests_per_s"])
    b, o = statistics.median(bare), statistics.median(ours)
    print(f"{'case':<44} {'req/s':>8} {'floor req/s':>12} {'ratio':>6}   (median of {args.runs})")
    print(f"{f'loadtest client, {args.concurrency} in flight, 16 tokens':<44} {o:>8.1f} {b:>12.1f} {b / o:>6.2f}")


if __name__ == "__main__":
    main()
