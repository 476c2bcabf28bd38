"""The node's gateway (nginx in front of vLLM) and log limits, rendered from spec-derived values.

Two halves, one module:
- on the controller, `values_from_fleet(fleet)` turns the fleet spec into GatewayValues and `env_text(values)` into
  the environment file user-data writes (ENV_FILE);
- on the node, a root oneshot runs this file (`python3 gateway.py --env ENV_FILE --key-file API_KEY_FILE ...`, see
  docs/gateway.md) which reads that file back (`from_env`, validated again) and the API key the prepare program
  fetched (API_KEY_FILE, tmpfs, root 0600), and writes the nginx config, the API-key map (tmpfs, 0640
  root:www-data), the journald drop-in and the logrotate file. Key rotation is: fetch the secret again
  (`systemctl restart gpufleet-prepare`), run this with `--key-only`, then `nginx -s reload`.

The node half imports only the standard library and jinja2 (python3-jinja2 comes with cloud-init on Ubuntu 24.04).
Every rendered file is checked by its own tool in tests/gateway (nginx -t, logrotate -d, systemd-analyze cat-config).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, get_type_hints

if TYPE_CHECKING:
    import jinja2


TEMPLATES = Path(__file__).parent / "templates"
# Where the image recipe installs this file and its three templates (images/node.py); TEMPLATES above resolves to
# NODE_LIB/templates there.
NODE_LIB = "/usr/local/lib/gpufleet"
ENV_FILE = "/etc/gpufleet/gateway.env"
# The templates render() reads, installed beside this file on the node.
NODE_TEMPLATES = ("nginx-gateway.conf.j2", "journald-gpufleet.conf.j2", "logrotate-gpufleet-gateway.j2")
# The API key as the prepare program writes it (tmpfs, root 0600, the bare key; empty when the fleet has no key).
# images/recipes.py Layout.api_key_file defaults to this: one name for the prepare program, vLLM and the gateway.
API_KEY_FILE = "/run/gpufleet/api-key"
KEY_MAP_FILE = "/run/gpufleet/gateway-key.map"
CONFIG_FILE = "/etc/nginx/conf.d/gpufleet-gateway.conf"
JOURNALD_FILE = "/etc/systemd/journald.conf.d/gpufleet.conf"
LOGROTATE_FILE = "/etc/logrotate.d/gpufleet-gateway"
ACCESS_LOG = "/var/log/gpufleet/gateway-access.log"
NGINX_PID = "/run/nginx.pid"
# While this file exists the health check answers 503, so the load balancer stops sending new requests (the node
# agent's drain writes it, docs/scaling-node.md). Directly in /run (tmpfs, 0755): nginx's workers (www-data) must be
# able to see it, and a reboot ends a drain.
DRAIN_FLAG = "/run/gpufleet-draining"
# An API key as the key map holds it: RFC 6750 token68 characters, nothing nginx or a regex would read specially
# except . and +, which are written as [.] and [+].
API_KEY = re.compile(r"^[A-Za-z0-9._~+/=-]{16,512}\Z")
PATH = re.compile(r"^/[A-Za-z0-9._~/-]{0,200}\Z")


class GatewayValues(NamedTuple):
    """The values the node's gateway configuration is rendered from. A NamedTuple, where gpufleet's other records are
    msgspec Structs: this file runs on the node, whose python3 has the standard library and jinja2 only (and a frozen
    dataclass of these 26 fields cost every preview 8.9M instructions to build, a NamedTuple 1.5M: issue 25)."""

    serving_port: int
    vllm_port: int
    metrics_port: int
    node_exporter_port: int
    dcgm_exporter_port: int
    rate_per_minute: int
    burst: int
    client_table_mib: int
    max_body_mib: int
    read_timeout_s: int
    health_path: str
    drain_wait_s: int
    require_key: bool
    trusted_proxies: tuple[str, ...]
    metrics_cidrs: tuple[str, ...]
    journal_max_use_mib: int
    journal_max_file_mib: int
    journal_keep_free_mib: int
    journal_keep_days: int
    access_log_keep_days: int
    access_log_max_mib: int


def values_from_fleet(fleet) -> GatewayValues:
    """The gateway's values from a validated Fleet (controller side)."""
    # deferred: runs on the node as a plain script, where no gpufleet package is installed
    from gpufleet import registry

    spec = fleet.spec
    g, logs = spec.serving.gateway, spec.logs
    cloud = registry.module(spec.cloud, "gateway")
    return GatewayValues(
        serving_port=spec.serving.port,
        vllm_port=g.vllm_port,
        metrics_port=g.metrics_port,
        node_exporter_port=g.node_exporter_port,
        dcgm_exporter_port=g.dcgm_exporter_port,
        rate_per_minute=g.rate_per_minute,
        burst=g.burst,
        client_table_mib=g.client_table_mib,
        max_body_mib=g.max_body_mib,
        read_timeout_s=max(g.read_timeout_s, spec.load_balancer.request_timeout_s),
        health_path=spec.load_balancer.health_check.path,
        # the load balancer marks a node down after unhealthy_threshold failed checks, one every interval_s
        drain_wait_s=spec.load_balancer.health_check.interval_s * spec.load_balancer.health_check.unhealthy_threshold,
        require_key=bool(spec.serving.api_key_secret),
        trusted_proxies=tuple(cloud.TRUSTED_PROXIES),
        metrics_cidrs=(spec.network.vpc_cidr,),
        journal_max_use_mib=logs.journal_max_use_mib,
        journal_max_file_mib=logs.journal_max_file_mib,
        journal_keep_free_mib=logs.journal_keep_free_mib,
        journal_keep_days=logs.journal_keep_days,
        access_log_keep_days=logs.access_log_keep_days,
        access_log_max_mib=logs.access_log_max_mib,
    )


def env_map(values: GatewayValues) -> dict[str, str]:
    """KEY=VALUE pairs for ENV_FILE (upper-case field names; lists comma-separated; booleans 0/1)."""
    out = {}
    for name, value in values._asdict().items():
        if isinstance(value, bool):
            text = "1" if value else "0"
        elif isinstance(value, tuple | list):
            text = ",".join(value)
        else:
            text = str(value)
        out[f"GATEWAY_{name.upper()}"] = text
    return out


def env_text(values: GatewayValues) -> str:
    return "".join(f"{k}={v}\n" for k, v in env_map(values).items())


def parse_env(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, sep, value = line.partition("=")
            if not sep:
                raise ValueError(f"not KEY=VALUE: {line!r}")
            out[key.strip()] = value.strip()
    return out


def from_env(env: dict[str, str]) -> GatewayValues:
    """GatewayValues from ENV_FILE's pairs, each value checked again (node side: nothing unchecked reaches nginx)."""
    kwargs: dict[str, Any] = {}  # each field's checked value: int, bool, tuple of CIDRs or path
    for name, kind in get_type_hints(GatewayValues).items():
        key = f"GATEWAY_{name.upper()}"
        if key not in env:
            raise ValueError(f"{key} is missing")
        raw = env[key]
        if kind is int:
            if not re.match(r"^[0-9]{1,9}\Z", raw):
                raise ValueError(f"{key}={raw!r} is not a whole number")
            kwargs[name] = int(raw)
        elif kind is bool:
            if raw not in ("0", "1"):
                raise ValueError(f"{key}={raw!r} is not 0 or 1")
            kwargs[name] = raw == "1"
        elif kind == tuple[str, ...]:
            items = tuple(x for x in raw.split(",") if x)
            for item in items:
                try:
                    ipaddress.ip_network(item, strict=True)
                except ValueError:
                    raise ValueError(f"{key}: {item!r} is not a CIDR") from None
            kwargs[name] = items
        else:
            if not PATH.match(raw):
                raise ValueError(f"{key}={raw!r} is not a plain path")
            kwargs[name] = raw
    return GatewayValues(**kwargs)


def _env(templates: Path) -> jinja2.Environment:
    import jinja2  # here, not at the top: the image recipes read this module's paths, and plan fit should not pay for jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render(
    values: GatewayValues,
    *,
    key_map_file: str = KEY_MAP_FILE,
    access_log: str = ACCESS_LOG,
    pid_file: str = NGINX_PID,
    drain_flag: str = DRAIN_FLAG,
    bind: str = "",
    templates: Path = TEMPLATES,
) -> dict[str, str]:
    """The node's gateway and log files as {name: text}: nginx (http-level include), journald drop-in, logrotate.

    `bind` ("" on the node: every address) prefixes the listen ports, e.g. "127.0.0.1:" for the tests.
    """
    env = _env(templates)
    ctx = {
        **values._asdict(),
        "key_map_file": key_map_file,
        "access_log": access_log,
        "pid_file": pid_file,
        "drain_flag": drain_flag,
        "env_file": ENV_FILE,
        "bind": bind,
    }
    return {
        "nginx": env.get_template("nginx-gateway.conf.j2").render(ctx),
        "journald": env.get_template("journald-gpufleet.conf.j2").render(ctx),
        "logrotate": env.get_template("logrotate-gpufleet-gateway.j2").render(ctx),
    }


def key_map_text(keys: list[str]) -> str:
    """The map entries that accept `Authorization: Bearer <key>` for each key, matched case-sensitively and whole."""
    lines = ["# gpufleet: API keys the gateway accepts (tmpfs only; written at boot and on rotation)\n"]
    for key in keys:
        if not API_KEY.match(key):
            raise ValueError("the API key must be 16-512 characters of letters, digits and . _ ~ + / = -")
        pattern = key.replace(".", "[.]").replace("+", "[+]")
        lines.append(f'"~^Bearer {pattern}$" 1;\n')
    return "".join(lines)


def _write(path: str, text: str, mode: int, group: str | None = None) -> None:
    """Write atomically (temp file in the same folder, then rename) with mode and group set before the rename."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".gpufleet-")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        if group is not None:
            # deferred: runs on the node as a plain script, where no gpufleet package is installed
            import grp

            os.chown(tmp, 0, grp.getgrnam(group).gr_gid)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="render the gpufleet gateway (nginx) and log limits on the node")
    parser.add_argument("--env", default=ENV_FILE)
    parser.add_argument("--key-file", default=API_KEY_FILE, help="the API key alone (the prepare program writes it)")
    parser.add_argument("--key-only", action="store_true", help="only rewrite the key map (key rotation)")
    parser.add_argument("--group", default="www-data", help="group that may read the key map")
    parser.add_argument("--root", default="/", help="write under this folder instead of / (tests)")
    args = parser.parse_args(argv)

    def at(path: str) -> str:
        return os.path.join(args.root, path.lstrip("/"))

    try:
        values = from_env(parse_env(Path(args.env).read_text()))
        keys: list[str] = []
        if values.require_key:
            key = Path(args.key_file).read_text().strip() if os.path.exists(args.key_file) else ""
            if not key:
                raise ValueError(f"{args.key_file} holds no API key and the fleet requires a key: the gateway stays down")
            keys = [key]
        _write(at(KEY_MAP_FILE), key_map_text(keys), 0o640, args.group)
        if not args.key_only:
            files = render(values)
            _write(at(CONFIG_FILE), files["nginx"], 0o644)
            _write(at(JOURNALD_FILE), files["journald"], 0o644)
            _write(at(LOGROTATE_FILE), files["logrotate"], 0o644)
            os.makedirs(at(os.path.dirname(ACCESS_LOG)), exist_ok=True)
    except (OSError, ValueError) as exc:
        print(f"gpufleet-gateway-render: {exc}", file=sys.stderr)  # never the key: messages above do not hold it
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
