"""The garbage collector's policy in a one-shot `gpufleet` process (the console script). Library use and tests keep
Python's own; scripts/bench_floor.py applies the same policy, so that a benchmark ratio is not the collector's.

A preview makes a few hundred thousand objects and keeps most of them until it exits:
- with CPython's first threshold (700 allocations) it runs ~400 collections and spends ~0.1 s in them; at THRESHOLD
  it runs a few dozen, and at most THRESHOLD unreachable container objects wait for the next one;
- what start-up made (modules, classes, the validated spec's pydantic models) lives until exit: it is frozen when the
  first program starts (the count of new objects restarts there), and the collector's time in a Tencent prod preview
  went from 29-38 ms to 21-27 ms (gc.callbacks around the whole command, 2026-12-06; the program's own large young
  collection, ~90,000 objects, remains);
- at exit everything is frozen: the interpreter's final collection otherwise costs ~0.2 s after a preview.
"""

from __future__ import annotations

import gc

THRESHOLD = 100_000

_one_shot = False
_started = False


def one_shot() -> None:
    """This process is the console script: one command, then exit."""
    global _one_shot
    _one_shot = True
    gc.set_threshold(THRESHOLD)


def program_starts() -> None:
    """A Pulumi program is about to run (gpufleet.mockengine): in a one-shot process, what exists now is start-up's,
    kept to the end; frozen once (the later programs of `cost compare` are collected as usual)."""
    global _started
    if _one_shot and not _started:
        _started = True
        gc.freeze()


def exiting() -> None:
    """The console script is about to exit: the objects it made need no collection at shutdown."""
    if _one_shot:
        gc.freeze()
