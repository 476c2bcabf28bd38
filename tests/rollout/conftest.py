"""The `fleet` fixture of tests/rollout (rollout_helpers.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from rollout_helpers import fleet  # noqa: E402, F401 - the fixture, registered by being here
