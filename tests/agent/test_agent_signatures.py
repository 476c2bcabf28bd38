"""Alibaba Cloud's RPC signature (HMAC-SHA1) as the node agent computes it, against the worked example of Alibaba's
"Signature mechanism" documentation (https://help.aliyun.com/en/document_detail/130769.html, the same example in the
ECS API reference's "Request signatures": AccessKey testid / testsecret, DescribeRegions, nonce
3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf, 2016-02-23T12:46:24Z, signature CT9X0VtwR86fNWSnsc6v8YGOjuE=; read 2026-12-03)."""

from gpufleet.components.alicloud import node_agent as alicloud_node

DOC_PARAMS = {
    "TimeStamp": "2016-02-23T12:46:24Z",
    "Format": "XML",
    "AccessKeyId": "testid",
    "Action": "DescribeRegions",
    "SignatureMethod": "HMAC-SHA1",
    "SignatureNonce": "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf",
    "Version": "2014-05-26",
    "SignatureVersion": "1.0",
}
DOC_SIGNATURE = "CT9X0VtwR86fNWSnsc6v8YGOjuE="


def test_reproduces_the_documented_signature():
    assert alicloud_node.rpc_signature(DOC_PARAMS, "testsecret", "GET") == DOC_SIGNATURE


def test_string_to_sign_is_the_documented_one():
    # The page prints the sorted pairs joined by a bare "&"; the documented signature is only reproduced with that
    # "&" percent-encoded (%26) like the rest of the canonical query, which is what the SDKs send.
    want = (
        "GET&%2F&AccessKeyId%3Dtestid%26Action%3DDescribeRegions%26Format%3DXML%26SignatureMethod%3DHMAC-SHA1"
        "%26SignatureNonce%3D3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf%26SignatureVersion%3D1.0"
        "%26TimeStamp%3D2016-02-23T12%253A46%253A24Z%26Version%3D2014-05-26"
    )
    assert alicloud_node.rpc_string_to_sign(DOC_PARAMS, "GET") == want


def test_any_change_changes_the_signature():
    assert alicloud_node.rpc_signature(DOC_PARAMS, "testsecret", "POST") != DOC_SIGNATURE
    assert alicloud_node.rpc_signature({**DOC_PARAMS, "Format": "JSON"}, "testsecret", "GET") != DOC_SIGNATURE
    assert alicloud_node.rpc_signature(DOC_PARAMS, "testsecreT", "GET") != DOC_SIGNATURE


def test_percent_encoding_follows_the_documented_rules():
    # unreserved A-Z a-z 0-9 - _ . ~ kept; space is %20 (not +), * is %2A, UTF-8 bytes as %XY upper-case
    assert alicloud_node.percent_encode('a-_.~ *+/:{}"é') == "a-_.~%20%2A%2B%2F%3A%7B%7D%22%C3%A9"
