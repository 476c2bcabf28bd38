"""The one module that touches the Pulumi SDK's mock engine, including its private parts.

The offline preview needs four things the SDK does not publish: `pulumi.runtime.sync_await._sync_await` (wait
for the program's outstanding work outside an event loop), `rpc._special_sig_key` / `rpc._special_secret_sig`
(how a secret looks in serialized inputs), and a subclass of `pulumi.runtime.mocks.MockMonitor` (to see every
registration with its parent). They are used here only; tests/test_mockengine.py fails when the SDK changes them.

The recorder sees every resource registration (custom and component) with the inputs the provider would receive
(Pulumi's camelCase keys) and resolves parents to names. Stack outputs are read from the root stack after all
outstanding work has finished. Secrets are shown as "[secret]".
"""

from __future__ import annotations

import _thread
import asyncio
import atexit
import contextvars
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pulumi
from pulumi.runtime import mocks as pmocks
from pulumi.runtime import rpc, settings
from pulumi.runtime import stack as pstack
from pulumi.runtime.sync_await import _sync_await

from gpufleet import collector

PROJECT = "gpufleet"
SECRET = "[secret]"
SECRET_KEY = rpc._special_sig_key  # the key of a serialized special value, and the value that marks a secret
SECRET_SIG = rpc._special_secret_sig
MockMonitor = pmocks.MockMonitor
sync_await = _sync_await


def _plain(value: Any) -> Any:
    """Inputs as JSON-able data; secrets masked, unknowns named."""
    if isinstance(value, dict):
        if value.get(SECRET_KEY) == SECRET_SIG:
            return SECRET
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, pulumi.Resource):
        return f"<{type(value).__name__}>"
    if value is rpc.UNKNOWN or type(value).__name__ == "Unknown":
        return "<unknown>"
    return value


class _Mocks(pulumi.runtime.Mocks):
    """Outputs the provider computes that the program reads (the cloud profile's `computed`) get a named placeholder."""

    def __init__(self, computed: dict[str, tuple[str, ...]] | None = None) -> None:
        self.computed = computed or {}

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        state = dict(args.inputs)
        for key in self.computed.get(args.typ, ()):
            name = key.removesuffix("[]")
            value = f"<{args.name}.{name}>"
            state.setdefault(name, [value] if key.endswith("[]") else value)
        return f"{args.name}_id", state

    def call(self, args: pulumi.runtime.MockCallArgs):
        """Invoke results the program reads (the cloud profile's `computed`, keyed by the invoke's token): placeholders."""
        return {key: f"<{key}>" for key in self.computed.get(args.token, ())}


class _Recorder(MockMonitor):
    def __init__(self, mocks: _Mocks) -> None:
        super().__init__(mocks)
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
                    "inputs": _plain(inputs),  # a secret is "[secret]", its value dropped
                }
            )
        return response


def run(
    program: Callable[[], object],
    stack: str,
    config: dict[str, Any],
    computed: dict[str, tuple[str, ...]] | None = None,
    preview: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run `program` as stack `stack` with that config under the mock engine: (resources it declares, stack outputs).
    `preview` False runs it as `pulumi up`'s update runs it (pulumi.runtime.is_dry_run() False).

    For every resource the SDK walks the whole call stack (pulumi.runtime.resource._get_stack_trace: each frame's
    source line read, its file made a URI), about 60,000 instructions a frame and resource. So the program runs on a
    thread of its own, started bare (_thread: no threading bootstrap frames), in a copy of the caller's context (the
    SDK's settings are context variables): on the caller's stack it would also walk the CLI's and the preview's 20-odd
    frames for each of the 40-odd resources of a fleet. What is recorded does not depend on it.
    Every run gets a fresh event loop; the threads the SDK hands its registrations to are kept from run to run
    (_POOL), as they are when a program runs more than once on one loop."""
    collector.program_starts()
    outcome: list[Any] = []
    context = contextvars.copy_context()
    done = _thread.allocate_lock()
    done.acquire()
    _thread.start_new_thread(context.run, (_run_here, program, stack, config, computed, outcome, done, preview))
    done.acquire()  # released by _run_here once it has appended the result or the exception
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _run_here(
    program: Callable[[], object],
    stack: str,
    config: dict[str, Any],
    computed: dict[str, tuple[str, ...]] | None,
    outcome: list[Any],
    done: _thread.LockType,
    preview: bool,
) -> None:
    """The program on a fresh event loop; its result or exception appended to `outcome`, then `done` released (one
    frame: it is under every resource's stack walk)."""
    try:
        loop = asyncio.new_event_loop()  # this run's, closed when the program's work is done
        loop.set_default_executor(_POOL)
        asyncio.set_event_loop(loop)
        try:
            settings.reset_options(project=PROJECT, stack=stack, preview=preview)
            pulumi.runtime.set_all_config({k: v if isinstance(v, str) else _json(v) for k, v in config.items()})
            mocks = _Mocks(computed)
            recorder = _Recorder(mocks)
            pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=preview, monitor=recorder)
            try:
                program()
                sync_await(pstack.wait_for_rpcs())
                root = settings.get_root_resource()
                outputs = {n: _resolve(v) for n, v in (root.outputs if isinstance(root, pstack.Stack) else {}).items()}
            finally:
                settings.reset_options()
            outcome.append((sorted(recorder.records, key=lambda r: (r["parent"] or "", r["type"], r["name"])), outputs))
        finally:
            _cancel_pending(loop)
            asyncio.set_event_loop(None)
            loop.close()
    except BaseException as exc:  # noqa: BLE001 -- re-raised on the caller's thread by run()
        outcome.append(exc)
    finally:
        done.release()


def _cancel_pending(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what a failed program left waiting (its registrations' RPCs), as asyncio.run does before it closes its
    loop: collected later, each printed "Task was destroyed but it is pending!" under the program's error. A program
    that ran to the end leaves none."""
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


class _KeptPool(ThreadPoolExecutor):
    """The event loops' default executor, kept when a loop closes (BaseEventLoop.close shuts its executor down):
    each of its threads gets an event loop from the SDK at its first registration, so new threads for each run would
    mean new loops, sockets and threads for every preview (`cost compare` runs eight)."""

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


_POOL = _KeptPool(thread_name_prefix="gpufleet-sdk")


# The mock monitor registers resources on worker threads, and the SDK gives each thread an event loop that it
# never closes; collected during interpreter teardown they print "Exception ignored ... Invalid file descriptor".
# They are closed at exit instead (a worker may reuse its loop in a later run of the same process).
_THREAD_LOOPS: set[asyncio.AbstractEventLoop] = set()


def _close_thread_loops() -> None:
    for loop in _THREAD_LOOPS:
        if not loop.is_running() and not loop.is_closed():
            loop.close()


atexit.register(_close_thread_loops)


def _json(value: Any) -> str:
    return json.dumps(value, default=str)  # YAML dates (e.g. autoscaling.schedule_window_start) as ISO text


def _resolve(value: Any) -> Any:
    output = pulumi.Output.from_input(value)
    if sync_await(output.is_secret()):
        return SECRET
    return _plain(sync_await(output.future()))
