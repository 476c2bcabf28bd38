"""Tencent Cloud naming rules for the names a stack gives the node role to read: the COS bucket of model.source and
the SSM secret of serving.api_key_secret. A name outside these rules is refused at validation; none may hold a
wildcard, since the CAM policy grants exactly that bucket and that secret.

- SSM secret name: up to 128 bytes of [a-zA-Z0-9-_], starting with a letter or digit (no `/`).
  Source: SSM API CreateSecret, SecretName, https://www.tencentcloud.com/document/api/1078/38656 (read 2026-12-03).
- COS bucket: `<name>-<APPID>`; <name> is 1-50 characters of lowercase letters, digits and -, not starting or
  ending with -; APPID is the account's digits, added by COS.
  Source: COS "存储桶概述 / 命名规范", https://cloud.tencent.com/document/product/436/13312 (the same text at
  https://doc.fincloud.tencent.cn/tcloud/Storage/COS/34992/669287/bucketoverview, read 2026-12-03).
  A bucket written without its -APPID suffix is refused: COS has no such bucket, and the node role's CAM resource
  would name every APPID of the account (`uid/*`).
"""

from __future__ import annotations

import re

SSM_SECRET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}\Z")
COS_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,48}[a-z0-9])?\Z")
COS_APPID = re.compile(r"^(?P<name>.+)-(?P<appid>[0-9]{5,20})\Z")


def cos_bucket_parts(bucket: str) -> tuple[str, str | None]:
    """(name, APPID or None) of a COS bucket as written in cos://<bucket>/key."""
    m = COS_APPID.match(bucket)
    return (m.group("name"), m.group("appid")) if m else (bucket, None)


def problems(spec) -> list[tuple[str, str]]:
    out = []
    source = spec.model.source
    if source.startswith("cos://"):
        bucket = source[len("cos://") :].split("/", 1)[0]
        name, appid = cos_bucket_parts(bucket)
        if appid is None or not COS_NAME.match(name):
            out.append(
                (
                    "fleet.model.source",
                    f"COS bucket {bucket!r} must be named <name>-<appid>: <name> 1-50 lowercase letters, digits and -, "
                    "not starting or ending with -, then the account's APPID (COS bucket naming), "
                    "e.g. cos://mybucket-1250000000/weights.tar",
                )
            )
    secret = spec.serving.api_key_secret
    if secret is not None and not SSM_SECRET.match(secret):
        out.append(
            (
                "fleet.serving.api_key_secret",
                f"{secret!r} is not a Tencent SSM secret name: up to 128 letters, digits, - and _, starting with a letter or "
                f"digit (SSM CreateSecret); e.g. {re.sub(r'[^A-Za-z0-9_-]', '-', secret).strip('-_') or 'gpufleet-prod-vllm-api-key'!r}",
            )
        )
    return out
