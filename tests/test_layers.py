"""The folders are the import graph: no module imports another that imports it back (directly or through others),
counting imports inside functions too. The layers themselves are import-linter's contracts ([tool.importlinter] in
pyproject.toml, `lint-imports` in CI); this test reads the same graph."""

from __future__ import annotations

import grimp


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    adj = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(adj):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on.add(v)
            if i < len(adj[v]):
                work.append((v, i + 1))
                w = adj[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            for w in adj[v]:
                if w in on:
                    low[v] = min(low[v], low[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_cycle_between_modules():
    assert _cycles(grimp.build_graph("gpufleet", cache_dir=None)) == []


def test_the_cycle_finder_finds_a_cycle():
    """The check can fail: a graph with a two-module and a three-module loop gives both."""
    g = grimp.ImportGraph()
    for a, b in [("p.a", "p.b"), ("p.b", "p.a"), ("p.c", "p.d"), ("p.d", "p.e"), ("p.e", "p.c"), ("p.e", "p.f")]:
        g.add_import(importer=a, imported=b)
    assert sorted(_cycles(g)) == [["p.a", "p.b"], ["p.c", "p.d", "p.e"]]


def _rooms(graph) -> grimp.ImportGraph:
    """The graph between gpufleet's top-level packages and modules (gpufleet.cost.estimate -> gpufleet.cost): the
    folders a reader sees, imports inside functions included."""
    rooms = grimp.ImportGraph()
    for m in graph.modules:
        room = ".".join(m.split(".")[:2])
        rooms.add_module(room)
        for imported in graph.find_modules_directly_imported_by(m):
            other = ".".join(imported.split(".")[:2])
            if other != room:
                rooms.add_import(importer=room, imported=other)
    return rooms


def test_no_import_cycle_between_top_level_packages():
    """The folders a reader sees form no loop, however long (issue 25: sizing's checks imported the node argv from
    components, which imports sizing; plan priced stacks with cost, whose commands preview through plan; the clouds'
    packages priced and simulated with the cost and simulate packages, whose stack-level modules preview through plan,
    which declares the components. The stack-level answers now live in gpufleet.finance and the simulator's vocabulary
    in gpufleet.behaviour)."""
    assert _cycles(_rooms(grimp.build_graph("gpufleet", cache_dir=None))) == []


def test_the_room_graph_sees_a_package_loop():
    """Three packages in a loop through different modules of each are one cycle of rooms; a fourth that only imports
    into it is not in it."""
    g = grimp.ImportGraph()
    for a, b in [("p.a.x", "p.b.y"), ("p.b.z", "p.c.w"), ("p.c.v", "p.a.u"), ("p.d.k", "p.a.x")]:
        g.add_import(importer=a, imported=b)
    assert _cycles(_rooms(g)) == [["p.a", "p.b", "p.c"]]
