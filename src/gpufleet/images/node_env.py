"""The environment contract between the fleet's user-data and the image's node files (a module of its own: the
fleet's program reads it without importing the node's renderer, jinja2 or the agent; images/node.py renders the files
that read it)."""

from __future__ import annotations

# The environment user-data writes to Layout.env_file: every name the prepare program or the node agent reads, and
# only those. GPUFLEET_METRICS_GROUP: the Alibaba CloudMonitor group the agent publishes into ("" on Tencent);
# GPUFLEET_SCALING_GROUP: the node's scaling group id, the dimension of every published point.
ENV_KEYS = (
    "GPUFLEET_FLEET",
    "GPUFLEET_CLOUD",
    "GPUFLEET_REGION",
    "GPUFLEET_ROLE",
    "GPUFLEET_DATA_DISK",
    "MODEL_SOURCE",
    "MODEL_SHA256",
    "API_KEY_SECRET",
    "GPUFLEET_METRICS_GROUP",
    "GPUFLEET_SCALING_GROUP",
)
# What the node agent reads from the fleet's and the gateway's environment files (images/node_agent.py).
AGENT_ENV_KEYS = (
    "GPUFLEET_CLOUD",
    "GPUFLEET_REGION",
    "GPUFLEET_ROLE",
    "GPUFLEET_METRICS_GROUP",
    "GPUFLEET_SCALING_GROUP",
    "GATEWAY_VLLM_PORT",
    "GATEWAY_SERVING_PORT",
    "GATEWAY_HEALTH_PATH",
    "GATEWAY_DRAIN_WAIT_S",
    "GATEWAY_READ_TIMEOUT_S",
)
