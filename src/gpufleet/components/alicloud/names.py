"""Alibaba Cloud naming rules for the names a stack gives the node role to read: the OSS bucket of model.source and
the KMS secret of serving.api_key_secret. A name outside these rules is refused at validation; none may hold a
wildcard, since the RAM policy grants exactly that bucket and that secret.

- OSS bucket: lowercase letters, digits and hyphens; starts and ends with a letter or digit; 3-63 characters.
  Source: https://www.alibabacloud.com/help/en/oss/user-guide/bucket-naming-conventions (read 2026-12-03).
- KMS secret name: up to 192 characters of letters, digits, _ / + = . @ -.
  Source: KMS API CreateSecret, SecretName, https://www.alibabacloud.com/help/doc-detail/154490.htm (read 2026-12-03).
  gpufleet also requires the first character to be a letter or digit (stacks/spec.py SECRET_NAME).
"""

from __future__ import annotations

import re

OSS_BUCKET = re.compile(r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]\Z")
KMS_SECRET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_/+=.@-]{0,191}\Z")


def problems(spec) -> list[tuple[str, str]]:
    out = []
    source = spec.model.source
    if source.startswith("oss://"):
        bucket = source[len("oss://") :].split("/", 1)[0]
        if not OSS_BUCKET.match(bucket):
            out.append(
                (
                    "fleet.model.source",
                    f"OSS bucket {bucket!r} breaks OSS naming: 3-63 lowercase letters, digits and -, starting and ending "
                    "with a letter or digit",
                )
            )
    secret = spec.serving.api_key_secret
    if secret is not None and not KMS_SECRET.match(secret):
        out.append(
            (
                "fleet.serving.api_key_secret",
                f"{secret!r} is not a KMS secret name: up to 192 letters, digits and _ / + = . @ -, starting with a letter or digit",
            )
        )
    return out
