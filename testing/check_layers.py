#!/usr/bin/env python3
"""The tree's shape, checked: each folder of the data path includes only the
folders below it, neither the include graph nor the graph of components (a
source file and its header, as one) has a loop, and no source file grows past
~400 lines without saying why at its top.

    python3 testing/check_layers.py     (ctest: check_layers)

Prints every breach and exits 1 when there is one. The layers (lowest first)
are written once, in LAYERS below; README.md's "Layout" section describes them.
"""

import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# folder -> the folders its files may include (itself always allowed).
# A folder is listed after everything it may include.
LAYERS = {
    "shared/slab": [],
    "shared/packets": ["shared/slab"],
    "shared/render": ["shared/slab"],
    "server/src/base": ["shared/slab", "shared/packets"],
    "server/src/control": ["shared/slab", "shared/packets", "server/src/base"],
    "server/src/mover": ["shared/slab", "shared/packets", "server/src/base"],
    "server/src/stage": ["shared/slab", "shared/packets", "server/src/base", "server/src/control",
                         "server/src/mover"],
    "server/src/shuffle": ["shared/slab", "shared/packets", "server/src/base", "server/src/control",
                           "server/src/stage"],
    "server/src/receive": ["shared/slab", "shared/packets", "server/src/base"],
    "server/src/record": ["shared/slab", "shared/packets", "server/src/base"],
    # A replay sends with the shuffler's sending side only (like server/lib).
    "server/src/replay": ["shared/slab", "shared/packets", "server/src/base", "server/src/shuffle"],
    "server/src/setup": ["shared/slab", "shared/packets", "server/src/base"],
    "server/src/demo": ["shared/slab", "shared/packets", "server/src/base", "server/src/setup"],
    "server/src": ["shared/slab", "shared/packets", "server/src/base", "server/src/control",
                   "server/src/mover", "server/src/stage", "server/src/shuffle", "server/src/receive",
                   "server/src/record", "server/src/replay", "server/src/setup", "server/src/demo"],
    # libslabcast sends with the shuffler's sending side, and nothing above it.
    "server/lib": ["shared/slab", "shared/packets", "server/src/base", "server/src/shuffle"],
    "plugin": ["shared/slab", "shared/render"],
    "data": ["shared/slab"],
}
SOURCE = re.compile(r"\.(h|cpp|cxx)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LONG_LINES = 400
# A longer file says why in its first 15 lines, in a comment naming its length.
LONG_REASON = re.compile(r"(?i)(over|longer than|more than) ?~?400 lines")


def layer_of(path):
    """The LAYERS folder a repository-relative path belongs to (the deepest match)."""
    best = None
    for folder in LAYERS:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def sources():
    for top in ("shared", "server", "plugin", "data"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for name in names:
                if SOURCE.search(name):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT)


def resolve(including, name, by_suffix):
    """The repository file an #include "name" in `including` means, or None (VTK, generated)."""
    local = os.path.normpath(os.path.join(os.path.dirname(including), name))
    if os.path.exists(os.path.join(ROOT, local)):
        return local
    hits = by_suffix.get(name, [])
    return hits[0] if len(hits) == 1 else None


def loops(graph, what):
    """Every cycle a depth-first search of `graph` (node -> nodes) meets, each as one line."""
    found = []
    state = {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                found.append(what + ": " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return found


def main():
    files = sorted(sources())
    by_suffix = {}
    for f in files:
        parts = f.split("/")
        for i in range(len(parts)):
            by_suffix.setdefault("/".join(parts[i:]), []).append(f)
    problems = []
    graph = {}
    for f in files:
        text = open(os.path.join(ROOT, f), encoding="utf-8").read()
        mine = layer_of(f)
        graph[f] = []
        for name in INCLUDE.findall(text):
            target = resolve(f, name, by_suffix)
            if target is None:
                continue
            graph[f].append(target)
            theirs = layer_of(target)
            if mine and theirs and theirs != mine and theirs not in LAYERS[mine]:
                problems.append('%s includes "%s": %s may not include %s' % (f, name, mine, theirs))
        lines = text.count("\n")
        if lines > LONG_LINES and not LONG_REASON.search("\n".join(text.splitlines()[:15])):
            problems.append("%s has %d lines and does not say at its top why it is over %d"
                            % (f, lines, LONG_LINES))
    problems += loops(graph, "include loop")
    # A component is a header with its source file: foo.cpp including bar.h
    # while bar.cpp includes foo.h is a loop between two components, which
    # the file graph alone does not show.
    components = {}
    for f, targets in graph.items():
        mine = os.path.splitext(f)[0]
        components.setdefault(mine, set()).update(
            os.path.splitext(t)[0] for t in targets if os.path.splitext(t)[0] != mine)
    problems += loops({k: sorted(v) for k, v in components.items()}, "component loop")
    for p in problems:
        print("check_layers: " + p)
    print("check_layers: %d files, %d includes within the repository, %d problem(s)"
          % (len(files), sum(len(v) for v in graph.values()), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
