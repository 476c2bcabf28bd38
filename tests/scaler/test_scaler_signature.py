"""TC3-HMAC-SHA256 as the scaler computes it, against the worked example of TencentCloud API "Signature v3"
(https://www.tencentcloud.com/document/api/213/33224, CVM DescribeInstances in ap-guangzhou, read 2026-12-03):
SecretId AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE, SecretKey Gu5t9xGARNpq86cd98joQYCN3EXAMPLE, X-TC-Timestamp 1551113065,
every intermediate value and the signature as the page prints them."""

from scaler_fakes import index

HOST = "cvm.tencentcloudapi.com"
PAYLOAD = '{"Limit": 1, "Filters": [{"Values": ["\\u672a\\u547d\\u540d"], "Name": "instance-name"}]}'
TS = 1551113065
DOC_CANONICAL = (
    "POST\n/\n\ncontent-type:application/json; charset=utf-8\nhost:cvm.tencentcloudapi.com\n\ncontent-type;host\n"
    "35e9c5b0e3ae67532d3c9f17ead6c90222632e5b1ff7f6e89887f1398934f064"
)
DOC_STRING_TO_SIGN = (
    "TC3-HMAC-SHA256\n1551113065\n2019-02-25/cvm/tc3_request\n5ffe6a04c0664d6b969fab9a13bdab201d63ee709638e2749d62a09ca18d7031"
)
DOC_SIGNATURE = "72e494ea809ad7a8c8f7a4507b9bddcbaa8e581f516e8da2f66e2c5a96525168"
DOC_AUTHORIZATION = (
    "TC3-HMAC-SHA256 Credential=AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE/2019-02-25/cvm/tc3_request, "
    f"SignedHeaders=content-type;host, Signature={DOC_SIGNATURE}"
)


def test_canonical_request_and_string_to_sign_are_the_documented_ones():
    assert index.canonical_request(HOST, PAYLOAD) == DOC_CANONICAL
    assert index.string_to_sign("cvm", TS, DOC_CANONICAL) == DOC_STRING_TO_SIGN


def test_reproduces_the_documented_signature_and_authorization():
    assert index.signature("Gu5t9xGARNpq86cd98joQYCN3EXAMPLE", "cvm", TS, DOC_STRING_TO_SIGN) == DOC_SIGNATURE
    got = index.authorization(
        "AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE", "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE", "cvm", HOST, PAYLOAD, TS
    )
    assert got == DOC_AUTHORIZATION


def test_the_date_is_utc_and_any_change_changes_the_signature():
    # 1551113065 is 2019-02-26 00:44:25 in UTC+8: the scope must still say 2019-02-25 (the page's own warning)
    assert "2019-02-25/cvm" in index.string_to_sign("cvm", TS, DOC_CANONICAL)
    assert index.signature("Gu5t9xGARNpq86cd98joQYCN3EXAMPLE", "as", TS, DOC_STRING_TO_SIGN) != DOC_SIGNATURE
    assert index.signature("Gu5t9xGARNpq86cd98joQYCN3EXAMPLF", "cvm", TS, DOC_STRING_TO_SIGN) != DOC_SIGNATURE
