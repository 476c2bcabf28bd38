"""gpufleet.secret: a key masked before text from a server is cut; a URL shown without its credentials or query."""

import pytest

from gpufleet.secret import Secret, has_credentials, masked_line, redact_url

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
        ("http://h:9180/metrics?access_token=t", "http://h:9180/metrics?***", False),
        ("http://h:8000?x=1#top", "http://h:8000?***#top", False),
        ("http://h/a@b", "http://h/a@b", False),  # an @ in the path is no user name
        ("http://h/p#frag?x", "http://h/p#frag?x", False),  # a ? in the fragment is the fragment's
        ("oss://bucket/key", "oss://bucket/key", False),
        ("", "", False),
    ],
)
def test_a_url_is_shown_without_its_credentials_or_query(url, shown, credentials):
    assert redact_url(url) == shown and has_credentials(url) is credentials
