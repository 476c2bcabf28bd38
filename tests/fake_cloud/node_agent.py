"""The fake cloud's part of the node agent (shipped beside images/node_agent.py as clouds/fakecloud.py): standard
library only, importing nothing of gpufleet.

Its custom-metric API: POST a JSON document {"group", "dimensions", "points": [{"name", "value", "time_ms"}]} to the
profile's node_metrics_api, signed with the node role's keys from the metadata service (role_credentials + role ->
{"KeyId", "Secret", "Expires"}): header X-Fk-Key the key id, X-Fk-Date the UTC time, X-Fk-Signature the hex
HMAC-SHA256 of "<date>\\n<sha256 hex of the body>" with the secret. The answer is {"accepted": n, "id": "..."}.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import time


def sign(secret: str, date: str, body: bytes) -> str:
    return hmac.new(secret.encode(), f"{date}\n{hashlib.sha256(body).hexdigest()}".encode(), hashlib.sha256).hexdigest()


class Publisher:
    def __init__(self, agent, cfg: dict, env: dict, cloud: dict):
        self.agent, self.cfg, self.env = agent, cfg, env
        self.endpoint = cloud["metrics_api"].format(region=env["GPUFLEET_REGION"])
        self.metadata = agent.Metadata(cloud["metadata"], cfg["http_timeout_s"], cfg["metadata_token_ttl_s"])
        self.role = env["GPUFLEET_ROLE"]
        self.target = f"{self.endpoint} as role {self.role}"
        self.where = f"group {env['GPUFLEET_METRICS_GROUP']}"
        self._keys: dict | None = None

    def keys(self) -> dict:
        if self._keys is None or time.time() > self._keys["until"]:
            status, body = self.metadata.get(self.metadata.md["role_credentials"] + self.role)
            try:
                doc = json.loads(body) if status == 200 else {}
                until = datetime.datetime.fromisoformat(doc["Expires"]).timestamp() - 60
                self._keys = {"id": doc["KeyId"], "secret": doc["Secret"], "until": until}
            except (ValueError, KeyError, TypeError):
                raise self.agent.AgentError(
                    f"role {self.role}: no usable keys from the metadata service (HTTP {status})"
                ) from None
        return self._keys

    def publish(self, values: dict[str, float], now: float) -> str:
        doc = {
            "group": self.env["GPUFLEET_METRICS_GROUP"],
            "dimensions": {self.cfg["dimension"]: self.env["GPUFLEET_SCALING_GROUP"]},
            "points": [
                {"name": self.cfg["metrics"][k]["name"], "value": round(v, 4), "time_ms": int(now * 1000)}
                for k, v in values.items()
            ],
        }
        body = json.dumps(doc, separators=(",", ":")).encode()
        keys = self.keys()
        date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        headers = {
            "Content-Type": "application/json",
            "X-Fk-Key": keys["id"],
            "X-Fk-Date": date,
            "X-Fk-Signature": sign(keys["secret"], date, body),
        }
        status, text = self.agent.http(
            self.endpoint, method="POST", data=body, timeout=self.cfg["http_timeout_s"], headers=headers
        )
        try:
            answer = json.loads(text)
        except ValueError:
            answer = {}
        if status != 200 or answer.get("accepted") != len(doc["points"]):
            raise self.agent.AgentError(f"fake metrics: HTTP {status}: {str(answer.get('error', text))[:200]}")
        return str(answer.get("id", ""))

    def reset(self) -> None:
        self._keys = None


def publisher(agent, cfg: dict, env: dict, cloud: dict) -> Publisher:
    return Publisher(agent, cfg, env, cloud)
