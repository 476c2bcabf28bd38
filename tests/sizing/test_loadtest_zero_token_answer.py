"""A whole stream with no content delta whose usage counts 0 output tokens is a failed request, not throughput.

gpufleet/sizing/loadtest.py's contract (module doc): "a stream with no content and no output token make the request a
failed sample (an error)". The OpenAI usage object's completion_tokens is the number of tokens generated; 0 of them and
no delta is an empty answer, whether the server reported usage or not.
"""

import asyncio

from fake_openai import Behaviour, FakeServer

from gpufleet.sizing import loadtest


def test_usage_of_zero_completion_tokens_and_no_delta_is_an_error():
    events = ('{"choices": [], "usage": {"completion_tokens": 0, "prompt_tokens": 7}}',)
    with FakeServer(Behaviour(events=events)) as srv:
        s = loadtest.settings(
            url=srv.url,
            model="fake-model",
            concurrency="1",
            requests=3,
            max_tokens=8,
            api_key_env=None,
            slo_p95_ms=None,
            timeout_s=5.0,
            max_duration_s=30.0,
            prompt=None,
            environ={},
        )
        r = asyncio.run(loadtest.run(s))
    (lv,) = r["levels"]
    assert lv["errors"] == lv["requests"] == 3 and lv["requests_per_s"] == 0, lv
    assert lv["top_errors"][0]["message"] == loadtest.EMPTY_ANSWER


def test_a_prompt_of_zero_tokens_is_a_count_not_a_broken_usage():
    """loadtest.py module doc: a usage count is broken when it is "no whole number from 0 to 1e8": 0 is one."""
    events = (
        '{"choices": [{"index": 0, "delta": {"content": "hi"}}]}',
        '{"choices": [], "usage": {"completion_tokens": 1, "prompt_tokens": 0}}',
    )
    with FakeServer(Behaviour(events=events)) as srv:
        s = loadtest.settings(
            url=srv.url,
            model="fake-model",
            concurrency="1",
            requests=2,
            max_tokens=8,
            api_key_env=None,
            slo_p95_ms=None,
            timeout_s=5.0,
            max_duration_s=30.0,
            prompt=None,
            environ={},
        )
        r = asyncio.run(loadtest.run(s))
    (lv,) = r["levels"]
    assert lv["errors"] == 0, lv["top_errors"]
    assert r["request"]["prompt_tokens"] == 0 and r["request"]["output_tokens_per_request"] == 1
