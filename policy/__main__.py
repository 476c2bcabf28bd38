"""`pulumi preview --policy-pack policy`: gpufleet's provider contract as a Pulumi policy pack (gpufleet/policypack.py)."""

try:
    from gpufleet.policypack import serve
except ModuleNotFoundError as exc:  # gpufleet or pulumi-policy missing from the venv PulumiPolicy.yaml names
    raise SystemExit(
        f"gpufleet's policy pack: {exc}: pip install 'gpufleet[policy]' into the virtualenv of PulumiPolicy.yaml"
    ) from None

serve()
