"""gpufleet's policy pack: the provider contract `gpufleet preview` checks offline (gpufleet/contract.py and each cloud's
components/<cloud>/rules.py), run by Pulumi on a real `pulumi preview|up --policy-pack policy`, so that a deploy
refuses what the offline preview refuses. A project's policy/ folder (written by `gpufleet init`; the checkout's is the
same) holds only PulumiPolicy.yaml and a __main__.py that calls serve(); the policies are here, in the package, so
tests call them and an upgrade of gpufleet updates them.

Needs pulumi-policy, which gpufleet itself does not (`pip install 'gpufleet[policy]'` in the virtual environment the
pack's PulumiPolicy.yaml names).
"""

from __future__ import annotations

import re

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyPack,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpufleet import clock, contract, namescope, registry

CLOUDS = registry.names()  # one policy per registered cloud
# The input a node's image id travels in (ECS instance and ESS scaling configuration, CVM instance and AS scaling
# config all name it imageId); images/lock.json ships placeholders until `gpufleet image build`.
IMAGE_INPUT = "imageId"
PLACEHOLDER = re.compile(r"placeholder", re.I)


def contract_validator(cloud: str):
    rules = contract.rules_for(cloud)

    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if not args.resource_type.startswith(f"{cloud}:"):
            return
        resource = {"type": args.resource_type, "name": args.name, "inputs": dict(args.props)}
        for v in contract.check_resource(rules, resource, clock.now()):
            report_violation(f"{v} (spec field: {v.spec_field})", None)

    return validate


def image_validator(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    image = args.props.get(IMAGE_INPUT)
    if isinstance(image, str) and PLACEHOLDER.search(image):
        report_violation(
            f"image_id {image!r} is a placeholder: build the image (`gpufleet image build`) so that images/lock.json "
            "records a real id for this region",
            None,
        )


def names_validator(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """The per-stack part of the name scopes (gpufleet/namescope.py): every cloud-side name within its documented
    length and not given twice in its scope within the stack. Clashes between stacks need all stacks of the account
    at once: `gpufleet check`."""
    resources = [{"type": r.resource_type, "name": r.name, "inputs": dict(r.props), "custom": True} for r in args.resources]
    for cloud in CLOUDS:
        names, unknown = namescope.names_of(resources, "", cloud, "")
        for message in namescope.stack_problems(names, unknown):
            report_violation(message, None)


def policies() -> list[Policy]:
    out: list[Policy] = [
        ResourceValidationPolicy(
            name=f"{cloud}-provider-contract",
            description=f"every argument sent to the {cloud} provider is within its documented constraints "
            f"({len(contract.rules_for(cloud))} rules, each cited in components/{cloud}/rules.py)",
            validate=contract_validator(cloud),
            enforcement_level=EnforcementLevel.MANDATORY,
        )
        for cloud in CLOUDS
    ]
    out.append(
        StackValidationPolicy(
            name="names-in-scope",
            description="every cloud-side name within its documented length and unique in its scope within the stack "
            "(components/<cloud>/name_scopes.yaml; across stacks: gpufleet check)",
            validate=names_validator,
            enforcement_level=EnforcementLevel.MANDATORY,
        )
    )
    out.append(
        ResourceValidationPolicy(
            name="no-placeholder-image",
            description="nodes boot from a built image, not the lock file's placeholder",
            validate=image_validator,
            enforcement_level=EnforcementLevel.MANDATORY,
        )
    )
    return out


def serve() -> None:
    """Run the pack for the Pulumi engine (policy/__main__.py): it serves the engine's requests and does not return."""
    PolicyPack(name="gpufleet-provider-contract", enforcement_level=EnforcementLevel.MANDATORY, policies=policies())
