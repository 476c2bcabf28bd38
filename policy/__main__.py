"""`pulumi preview --policy-pack policy`: the gpufleet provider contract as a Pulumi policy pack (serves the engine)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from policies import policies  # noqa: E402
from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

PolicyPack(name="gpufleet-provider-contract", enforcement_level=EnforcementLevel.MANDATORY, policies=policies())
