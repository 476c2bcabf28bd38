"""gpufleet.secret: a key masked before text from a server is cut; a URL shown without its credentials or query."""

import pytest

from gpufleet.secret import Secret, has_credentials, holds_url_credentials, masked_line, redact_url

KEY = "sk-0123456789abcdef"


def test_a_secret_is_itself_but_its_repr_is_masked():
    assert Secret(KEY) == KEY and KEY not in repr(Secret(KEY)) and KEY not in repr({"k": Secret(KEY)})


def test_the_key_is_masked_before_the_cut_so_no_part_of_it_is_kept():
    text = "x" * 15 + KEY  # the cut at 20 falls inside the key
    assert masked_line(text, KEY, 20) == "x" * 15 + "***"
    assert masked_line(text, None, 20) == text[:20] + "…"  # without the key: only cut
    assert masked_line("a\n  b\tc", KEY, 20) == "a b c"
    assert masked_line(f"{KEY}\n{KEY}", KEY, 5) == "*** *…"


@pytest.mark.parametrize(
    "url, shown, credentials",
    [
        ("http://user:pw@10.0.0.5:99999", "http://***@10.0.0.5:99999", True),
        ("https://tok@h/x?a=1", "https://***@h/x?***", True),
        ("LTAI:key@ecs.aliyuncs.com", "***@ecs.aliyuncs.com", True),  # no scheme: an --endpoint
        ("http://u:p?ss@h/m", "http://***@h/m", True),  # a bare ? in the password: never shown up to it
        ("http://u:pa/SEKRET123@h/m", "http://***@h/m", True),  # a bare /: `u:pa` is no host:port, no client reads it
        ("http://h:9180/metrics?access_token=t", "http://h:9180/metrics?***", False),
        ("http://h:8000?x=1#top", "http://h:8000?***#***", False),
        ("http://h/a@b", "http://h/a@b", False),  # an @ in the path is no user name
        ("http://h/p#frag?x", "http://h/p#***", False),  # a ? in the fragment is the fragment's
        ("http://h:9180/metrics#access_token=SEKRET123", "http://h:9180/metrics#***", False),  # never sent, never shown
        # the authority ends at the first / ? or #, as httpx and urlsplit end it: a query holding an @ is a query
        ("http://h:9090?x=a@b", "http://h:9090?***", False),
        ("ecs.cn-hangzhou.aliyuncs.com:443?x=a@b", "ecs.cn-hangzhou.aliyuncs.com:443?***", False),
        # what a client skips before the authority: leading spaces and control characters, one slash, backslashes
        (" http://u:SEKRET123@h", " http://***@h", True),
        ("\t\nhttps://u:SEKRET123@h/x", "\t\nhttps://***@h/x", True),
        ("http:/u:SEKRET123@h/", "http:/***@h/", True),
        ("http:\\\\u:SEKRET123@h/", "http:\\\\***@h/", True),
        ("http:///u:SEKRET123@h/", "http:///***@h/", True),
        ("ht\ttp://u:SEKRET123@h/", "ht\ttp://***@h/", True),  # urlsplit drops a tab anywhere
        ("http: //u:SEKRET123@h", "http: //***@h", True),
        ("\x1b[0mhttp://u:SEKRET123@h", "\x1b***@h", True),  # not a URL at all: up to the last @ is ***
        ("https://h/fetch/http://u:SEKRET123@x/y", "https://h/fetch/http://***@x/y", True),  # a URL in the path
        ("https://h/models/org@v1/x", "https://h/models/org@v1/x", False),
        ("http://[::1]:8000/v1", "http://[::1]:8000/v1", False),
        ("oss://bucket/key", "oss://bucket/key", False),
        ("", "", False),
    ],
)
def test_a_url_is_shown_without_its_credentials_or_query(url, shown, credentials):
    assert redact_url(url) == shown and has_credentials(url) is credentials


@pytest.mark.parametrize(
    "text, held",
    [
        ("name=http://u:SEKRET123@h/x", True),  # --lora-modules name=URL
        ('{"url": "http://u:SEKRET123@h/x"}', True),
        ('{"a": "http://h", "b": "x@y"}', False),  # a quote ends a URL
        ('{"url": "http://h:1?x=a@b"}', False),  # as has_credentials reads it
        ("grpc://[::1]:4317", False),
        ("org/model@v1", False),  # no scheme: no URL
    ],
)
def test_a_url_inside_a_text_is_read_as_a_url_is(text, held):
    assert holds_url_credentials(text) is held


@pytest.mark.parametrize("url", ["http://u:SEKRET123@h", "https://SEKRET123@h:1/x", "LTAI:SEKRET123@ecs.aliyuncs.com"])
@pytest.mark.parametrize("before", ["", " ", "\t", "\x00", "\u3000"])
def test_a_url_with_credentials_is_detected_and_hidden_whatever_comes_first(url, before):
    assert has_credentials(before + url) and "SEKRET123" not in redact_url(before + url)
