"""Run the Pulumi program under the SDK's mock engine: no CLI, no credentials, no network.

The recorder sees every resource registration (custom and component) with the inputs the provider
would receive (Pulumi's camelCase keys) and resolves parents to names. Stack outputs are read from
the root stack after all outstanding work has finished. Secrets are shown as "[secret]".
"""

from __future__ import annotations

import asyncio
import atexit
import runpy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import mocks as pmocks
from pulumi.runtime import rpc, settings
from pulumi.runtime import stack as pstack
from pulumi.runtime.sync_await import _sync_await

from gpufleet.stacks import loader

PROJECT = "gpufleet"
SECRET = "[secret]"


@dataclass
class Inventory:
    stack: str
    resources: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"stack": self.stack, "resources": self.resources, "outputs": self.outputs}

    def of_type(self, token: str) -> list[dict]:
        return [r for r in self.resources if r["type"] == token]


def _plain(value: Any) -> Any:
    """Inputs as JSON-able data; secrets masked, unknowns named."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return SECRET
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, pulumi.Resource):
        return f"<{type(value).__name__}>"
    if value is rpc.UNKNOWN or type(value).__name__ == "Unknown":
        return "<unknown>"
    return value


# Outputs the provider computes that the program reads; the mock fills them with a named placeholder.
COMPUTED = {
    "alicloud:slb/applicationLoadBalancer:ApplicationLoadBalancer": ("address",),
    "alicloud:ecs/eipAddress:EipAddress": ("ipAddress",),
    "alicloud:vpc/natGateway:NatGateway": ("snatTableIds",),
    "alicloud:ess/scalingRule:ScalingRule": ("ari",),
    "tencentcloud:Clb/instance:Instance": ("clbVips",),
    "tencentcloud:Eip/instance:Instance": ("publicIp",),
    "tencentcloud:Clb/listener:Listener": ("listenerId",),
}


class _Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        state = dict(args.inputs)
        for key in COMPUTED.get(args.typ, ()):
            value = f"<{args.name}.{key}>"
            state.setdefault(key, [value] if key == "clbVips" else value)
        return f"{args.name}_id", state

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


class _Recorder(pmocks.MockMonitor):
    def __init__(self) -> None:
        super().__init__(_Mocks())
        self.records: list[dict[str, Any]] = []
        self.names: dict[str, str] = {}

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            _THREAD_LOOPS.add(asyncio.get_event_loop())  # the one the SDK just ensured on this thread
            self.names[response.urn] = request.name
            inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
            self.records.append(
                {
                    "type": request.type,
                    "name": request.name,
                    "parent": self.names.get(request.parent),
                    "custom": bool(request.custom),
                    "inputs": _plain(_strip_secrets(inputs)),
                }
            )
        return response


def _strip_secrets(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return {rpc._special_sig_key: rpc._special_secret_sig}
        return {k: _strip_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strip_secrets(v) for v in value]
    return value


def run(program: Callable[[], None], stack: str, config: dict[str, Any]) -> Inventory:
    """Run `program` as stack `stack` with that config under the mock engine and record what it declares."""
    _ensure_loop()
    settings.reset_options(project=PROJECT, stack=stack, preview=True)
    pulumi.runtime.set_all_config({k: v if isinstance(v, str) else _json(v) for k, v in config.items()})
    recorder = _Recorder()
    pulumi.runtime.set_mocks(_Mocks(), project=PROJECT, stack=stack, preview=True, monitor=recorder)
    try:
        program()
        _sync_await(pstack.wait_for_rpcs())
        root = settings.get_root_resource()
        outputs = {name: _resolve(value) for name, value in (root.outputs if root else {}).items()}
    finally:
        settings.reset_options()
    resources = sorted(recorder.records, key=lambda r: (r["parent"] or "", r["type"], r["name"]))
    return Inventory(stack=stack, resources=resources, outputs=outputs)


# The mock monitor registers resources on worker threads, and the SDK gives each thread an event loop that it
# never closes; collected during interpreter teardown they print "Exception ignored ... Invalid file descriptor".
# They are closed at exit instead (a worker may reuse its loop in a later run of the same process).
_THREAD_LOOPS: set[asyncio.AbstractEventLoop] = set()


def _ensure_loop() -> None:
    """Give this thread an event loop when it has none: the SDK asks for the current one, and an earlier
    asyncio.run() in the same process (the load test, a caller's own) leaves the main thread without one."""
    try:
        asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        _THREAD_LOOPS.add(loop)


def _close_thread_loops() -> None:
    for loop in _THREAD_LOOPS:
        if not loop.is_running() and not loop.is_closed():
            loop.close()


atexit.register(_close_thread_loops)


def _json(value: Any) -> str:
    import json

    return json.dumps(value, default=str)  # YAML dates (e.g. autoscaling.schedule_window_start) as ISO text


def _resolve(value: Any) -> Any:
    output = pulumi.Output.from_input(value)
    if _sync_await(output.is_secret()):
        return SECRET
    return _plain(_sync_await(output.future()))


def _require_program(fleet: loader.Fleet) -> None:
    from gpufleet.components.clouds import has_program
    from gpufleet.errors import Problem, UserError

    if not has_program(fleet.spec.cloud):
        raise UserError([Problem(fleet.file, "fleet.cloud", f"{fleet.spec.cloud} is in the catalog but has no fleet program")])


def program_file(root: Path | None = None) -> Path:
    return (root or loader.project_root()) / "stacks" / "__main__.py"


def preview_stack(stack: str, root: Path | None = None) -> Inventory:
    """Validate the stack file, then run stacks/__main__.py under mocks with that stack's config."""
    fleet = loader.load_fleet(stack, root)  # clear errors before any resource is registered
    _require_program(fleet)
    _, config = loader.read_stack_config(stack, root)
    main = program_file(root)
    return require_contract(fleet, run(lambda: runpy.run_path(str(main), run_name="__main__"), stack, config))


def preview_spec(raw: dict[str, Any], stack: str) -> Inventory:
    """Preview a spec given as data (used by cost compare and region new): same program, same checks."""
    from gpufleet.components.fleet import declare_program

    fleet = loader.validate(raw, stack=stack, file=f"<{stack}>")
    _require_program(fleet)
    return require_contract(fleet, run(lambda: declare_program(fleet), stack, {loader.CONFIG_KEY: raw}))


def require_contract(fleet: loader.Fleet, inventory: Inventory) -> Inventory:
    """The provider contract (gpufleet/contract.py) on what the program declared: a broken rule is a problem on the
    spec field that leads to the value, with the rule's citation (exit 2; `pulumi up` would have been refused)."""
    from gpufleet import clock, contract
    from gpufleet.errors import Problem, UserError

    violations = contract.check_inventory(inventory.resources, clock.now(), fleet.spec.cloud)
    if violations:
        raise UserError([Problem(fleet.file, field, message) for field, message in contract.problems(violations)])
    return inventory
