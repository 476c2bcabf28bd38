#!/usr/bin/python3
"""Stand-in for the clouds' CLIs on the test node (ossutil, aliyun, coscli, tccli), one program under four names.

What it models of the real tools (each decision noted where it is made):
- argument shapes the node's prepare program uses; anything else exits 2 like an unknown flag;
- credentials: the instance role named on the command line (or in coscli's config file) must be the node's role;
- permission: each API call is allowed only when the node role's policy document (from the stack's recorded
  inventory) has a statement whose action and resource match it, including the HeadBucket that `coscli cp`
  makes before it downloads (tencentyun/coscli cmd/cp.go);
- SSM: a secret created without a version has only SSM_Current; any other VersionId is not found.
Its configuration is /srv/standin/config.json (written by the test); every call is appended to /srv/standin/calls.
"""

import fnmatch
import json
import os
import shutil
import sys

DIR = os.environ.get("STANDIN_DIR", "/srv/standin")
CONF = json.load(open(os.path.join(DIR, "config.json")))
NAME = os.path.basename(sys.argv[0])


def log(line: str) -> None:
    with open(os.path.join(DIR, "calls"), "a") as fh:
        fh.write(line + "\n")


def die(code: int, message: str):
    print(f"{NAME}: {message}", file=sys.stderr)
    sys.exit(code)


def allowed(action: str, resource: str) -> bool:
    """Alibaba RAM (Action/Resource) or Tencent CAM (action name/<svc>:<Act>, resource) allow statements."""
    for st in CONF["policy"].get("Statement") or CONF["policy"].get("statement") or []:
        effect = (st.get("Effect") or st.get("effect") or "").lower()
        actions = st.get("Action") or st.get("action") or []
        resources = st.get("Resource") or st.get("resource") or []
        actions = [actions] if isinstance(actions, str) else actions
        resources = [resources] if isinstance(resources, str) else resources
        if effect == "allow" and any(fnmatch.fnmatchcase(action, a.removeprefix("name/")) for a in actions):
            if any(fnmatch.fnmatchcase(resource, r) for r in resources):
                return True
    return False


def opts(args: list[str], flags: set[str], valued: set[str]) -> tuple[list[str], dict]:
    pos, out, i = [], {}, 0
    while i < len(args):
        a = args[i]
        if a in flags:
            out[a] = True
        elif a in valued:
            if i + 1 >= len(args):
                die(2, f"flag needs an argument: {a}")
            out[a] = args[i + 1]
            i += 1
        elif a.startswith("-"):
            die(2, f"unknown flag: {a}")
        else:
            pos.append(a)
        i += 1
    return pos, out


def need_role(given: str | None) -> None:
    if given != CONF["role"]:
        die(1, f"cannot get credentials of role {given!r} from the metadata service (the instance has {CONF['role']!r})")


def copy_object(src: str, dst: str) -> None:
    local = CONF["objects"].get(src)
    if local is None:
        die(1, f"NoSuchKey: {src}")
    shutil.copyfile(local, dst)


def ossutil(args):
    pos, o = opts(args, {"--force", "-f"}, {"--mode", "--ecs-role-name", "-e", "--endpoint"})
    if len(pos) != 3 or pos[0] != "cp":
        die(2, "usage: ossutil cp SRC DST")
    if o.get("--mode") != "EcsRamRole":
        die(1, "no credentials: give --mode EcsRamRole (ossutil has no config file on the node)")
    need_role(o.get("--ecs-role-name"))
    endpoint = o.get("-e") or o.get("--endpoint")
    if endpoint != f"oss-{CONF['region']}-internal.aliyuncs.com":
        die(1, f"endpoint {endpoint!r} is not the region's internal OSS endpoint")
    bucket, key = pos[1][len("oss://") :].split("/", 1)
    if not allowed("oss:GetObject", f"acs:oss:*:*:{bucket}/{key}"):
        die(1, "ErrorCode=AccessDenied, ErrorMessage=You have no right to access this object because of bucket acl.")
    copy_object(pos[1], pos[2])


def aliyun(args):
    if args[:2] != ["kms", "GetSecretValue"]:
        die(2, "only `aliyun kms GetSecretValue` is modelled")
    pos, o = opts(args[2:], set(), {"--SecretName", "--region", "--mode", "--ram-role-name"})
    if pos or o.get("--mode") != "EcsRamRole":
        die(2, "want --mode EcsRamRole")
    need_role(o.get("--ram-role-name"))
    name = o.get("--SecretName")
    if not allowed("kms:GetSecretValue", f"acs:kms:{o.get('--region')}:*:secret/{name}"):
        die(1, "ERROR: SDK.ServerError Forbidden.NoPermission")
    if name not in CONF["secrets"]:
        die(1, "ERROR: SDK.ServerError Forbidden.ResourceNotFound")
    print(json.dumps({"RequestId": "r", "SecretName": name, "SecretData": CONF["secrets"][name]}))


def coscli(args):
    pos, o = opts(args, set(), {"--config-path", "-c"})
    path = o.get("--config-path") or o.get("-c")
    if not path:
        die(1, "missing parameter SecretID")  # no config file: coscli has no other credential source
    if not path.endswith(".yaml"):
        die(1, "config file need end with .yaml")
    import re

    text = open(path).read()
    mode = re.search(r"mode:\s*(\S+)", text)
    role = re.search(r"cvmrolename:\s*(\S+)", text)
    if not mode or mode.group(1) != "CvmRole":
        die(1, "missing parameter SecretID")
    need_role(role.group(1) if role else None)
    if len(pos) != 3 or pos[0] != "cp":
        die(2, "usage: coscli cp SRC DST")
    bucket, key = pos[1][len("cos://") :].split("/", 1)
    if f"name: {bucket}" not in text or f"region: {CONF['region']}" not in text:
        die(1, f"bucket {bucket} is not in the config file (coscli needs its region)")
    appid = bucket.rsplit("-", 1)[-1]
    base = f"qcs::cos:{CONF['region']}:uid/{appid}:{bucket}/"
    if not allowed("cos:HeadBucket", base):  # cmd/cp.go checks the bucket before copying
        die(1, "HeadBucket: 403 AccessDenied")
    if not allowed("cos:GetObject", base + key):
        die(1, "GetObject: 403 AccessDenied")
    copy_object(pos[1], pos[2])


def tccli(args):
    if args[:2] != ["ssm", "GetSecretValue"]:
        die(2, "only `tccli ssm GetSecretValue` is modelled")
    pos, o = opts(args[2:], {"--cli-unfold-argument", "--use-cvm-role"}, {"--SecretName", "--VersionId", "--region"})
    if pos or "--cli-unfold-argument" not in o:
        die(2, "unknown arguments (give --cli-unfold-argument for --Name value)")
    if "--use-cvm-role" not in o:
        die(1, "secretId is invalid")
    name, version = o.get("--SecretName"), o.get("--VersionId")
    if not allowed("ssm:GetSecretValue", f"qcs::ssm:{o.get('--region')}:uin/1:secret/creatorUin/1/{name}"):
        die(1, '[TencentCloudSDKException] code:AuthFailure.UnauthorizedOperation message:"CAM policy denies"')
    if name not in CONF["secrets"] or version != "SSM_Current":
        die(1, f"[TencentCloudSDKException] code:ResourceNotFound message:secret {name} version {version} not found")
    print(json.dumps({"RequestId": "r", "SecretName": name, "VersionId": version, "SecretString": CONF["secrets"][name]}))


if __name__ == "__main__":
    log(" ".join([NAME, *sys.argv[1:]]))
    {"ossutil": ossutil, "aliyun": aliyun, "coscli": coscli, "tccli": tccli}[NAME](sys.argv[1:])
