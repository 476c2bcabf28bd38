"""The offline preview: the stack's Pulumi program run under the SDK's mock engine (gpufleet.mockengine),
no CLI, no credentials, no network; what it records is the inventory cost, the policy tests and goldens read."""

from __future__ import annotations

import contextlib
import itertools
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from gpufleet import clock, contract, mockengine, registry, validation
from gpufleet.errors import Problem, UserError
from gpufleet.stacks import loader

SECRET = mockengine.SECRET


class Inventory(Struct):
    """What a preview recorded: the resources the program registered and its outputs."""

    stack: str
    resources: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"stack": self.stack, "resources": self.resources, "outputs": self.outputs}

    def of_type(self, token: str) -> list[dict]:
        return [r for r in self.resources if r["type"] == token]


PROGRAM = "stacks/__main__.py"
PUT_BACK = (
    "the Pulumi program that `pulumi up` and `gpufleet preview` run for every stack (Pulumi.yaml main: stacks/); put "
    "it back as `gpufleet init` writes it: `import pulumi`, `from gpufleet.components.fleet import declare_program`, "
    "`from gpufleet.validation import load_fleet`, `declare_program(load_fleet(pulumi.get_stack()))`"
)


class ProgramFailed(UserError):
    """stacks/__main__.py is there but is not valid Python or fails on a line of its own: no stack can be previewed."""


def program_file(root: Path | None = None) -> Path:
    return (root or loader.project_root()) / "stacks" / "__main__.py"


def preview_stack(stack: str, root: Path | None = None) -> Inventory:
    """Validate the stack file, then run stacks/__main__.py under mocks with that stack's config.

    The program loads the stack again, as under `pulumi up`; loader.load_fleet returns the fleet validated here."""
    fleet = validation.load_fleet(stack, root)  # clear errors before any resource is registered
    _, config = loader.read_stack_config(stack, root)
    main = program_file(root)
    if not main.is_file():  # a project made by hand (Pulumi.yaml, stacks/ and `region new`) may lack it
        raise UserError([Problem(PROGRAM, "", f"{'is a folder' if main.is_dir() else 'missing'}: {PUT_BACK}")])
    try:
        text = main.read_bytes()
    except OSError as exc:
        raise UserError([Problem(PROGRAM, "", f"cannot be read ({exc.strerror}): {PUT_BACK}")]) from None
    try:
        code = compile(text, str(main), "exec")
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte
        line, column = (exc.lineno or 0, exc.offset or 0) if isinstance(exc, SyntaxError) else (0, 0)
        why = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise ProgramFailed([Problem(PROGRAM, "", f"not valid Python ({why}): {PUT_BACK}", line=line, column=column)]) from None
    # Run as a script (`__name__` "__main__"), called straight from the mock engine's thread: runpy.run_path's three
    # frames would sit under every resource's stack walk (mockengine.run).
    # What the program prints goes to standard error while it runs (sys.stdout redirected, not captured), so
    # `preview --json` on standard output stays JSON; output written to file descriptor 1 directly (a subprocess the
    # program starts) is not redirected.
    try:
        with contextlib.redirect_stdout(sys.stderr):
            return _run(partial(exec, code, {"__name__": "__main__", "__file__": str(main)}), stack, config, fleet)
    except (Exception, SystemExit) as exc:  # SystemExit: sys.exit() in the program ends it as a failure, not gpufleet
        if (place := _program_place(exc, str(main))) is None:
            raise  # raised inside gpufleet or the SDK: a bug, shown as one
        why = type(exc).__name__ + (f": {exc}" if str(exc) else "")
        raise ProgramFailed([Problem(PROGRAM, "", f"the program failed ({why}): {PUT_BACK}", *place)]) from None


def _program_place(exc: BaseException, path: str) -> tuple[int, int] | None:
    """(line, column) of stacks/__main__.py where `exc` was raised by the program's own code (a name it misspells, an
    import that fails), else None."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or tb.tb_frame.f_code.co_filename != path:
        return None
    _, _, column, _ = next(itertools.islice(tb.tb_frame.f_code.co_positions(), tb.tb_lasti // 2, None), (0, 0, None, 0))
    return tb.tb_lineno, (column or 0) + 1


def preview_fleet(fleet: loader.Fleet, raw: dict[str, Any]) -> Inventory:
    """Preview a fleet validated from data (cost compare's options): the same program, not validated again."""
    # deferred: the components import the providers (~100 ms): only a run declares them
    from gpufleet.components.fleet import declare_program

    return _run(partial(declare_program, fleet), fleet.stack, {loader.CONFIG_KEY: raw}, fleet)


def preview_spec(raw: dict[str, Any], stack: str) -> Inventory:
    """Validate a spec given as data, then preview it."""
    return preview_fleet(validation.validate(raw, stack=stack, file=f"<{stack}>"), raw)


def run(
    program: Callable[[], object], stack: str, config: dict[str, Any], computed: dict[str, tuple[str, ...]] | None = None
) -> Inventory:
    """Any Pulumi program (the fleet's, the images program) under the mock engine, as an Inventory."""
    resources, outputs = mockengine.run(program, stack, config, computed)
    return Inventory(stack=stack, resources=resources, outputs=outputs)


def _run(program: Callable[[], object], stack: str, config: dict[str, Any], fleet: loader.Fleet) -> Inventory:
    """The fleet's program under the mock engine, then the provider contract on what it declared."""
    # deferred: cryptography (~14 ms): only a given certificate is read
    from gpufleet.components import hardening

    config = hardening.offline_config(fleet.spec, config)
    return require_contract(fleet, run(program, stack, config, registry.profile(fleet.spec.cloud).computed))


def require_contract(fleet: loader.Fleet, inventory: Inventory) -> Inventory:
    """The provider contract (gpufleet/contract.py) on what the program declared: a broken rule is a problem on the
    spec field that leads to the value, with the rule's citation (exit 2; `pulumi up` would have been refused)."""

    violations = contract.check_inventory(inventory.resources, clock.now(), fleet.spec.cloud)
    if violations:
        raise UserError([Problem(fleet.file, field, message) for field, message in contract.problems(violations)])
    return inventory
