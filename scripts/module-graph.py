#!/usr/bin/env python3
"""The module graph of a crate, from its `use` statements and paths, and its cycles.

Usage: scripts/module-graph.py [CRATE_SRC_DIR] [--top]

Reads every .rs file under CRATE_SRC_DIR (default crates/sluice-proxy/src), turns each
into a module path (http1/check.rs -> http1::check, http1/mod.rs -> http1), and adds an
edge A -> B whenever A names B through `crate::`, `super::` or a child module. A module's
`mod` declarations are not edges (a parent owning a child is not a dependency). Prints
the edges (--top: between top-level modules only) and exits with 1 if there is a cycle,
naming it. Test modules (`#[cfg(test)] mod tests`) are ignored: tests may reach anywhere.
"""
import os
import re
import sys


def module_of(root, path):
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib", "main"):
        rel = rel[:-1]
    return tuple(rel)


def strip_tests(text):
    """The file without its `#[cfg(test)] mod ... { ... }` blocks and comments."""
    text = re.sub(r"//[^\n]*", "", text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while depth and j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def paths_named(text):
    """Every path a file names: in `use` trees (braces expanded) and inline."""
    found = []
    for use in re.findall(r"\buse\s+([^;]+);", text):
        found.extend(expand(use.replace("\n", " ").replace(" ", "")))
    found.extend(re.findall(r"\b((?:crate|super)(?:::\w+)+)", text))
    return found


def expand(tree):
    """`a::{b, c::{d}}` -> [a::b, a::c::d]."""
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [tree.split(" as ")[0]]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    parts.append(cur)
    return [p2 for p in parts if p for p2 in expand(prefix + p)]


def resolve(path, here, modules):
    """The longest known module that `path` (as written in module `here`) lies in."""
    segs = path.split("::")
    if segs[0] == "crate":
        base, segs = (), segs[1:]
    elif segs[0] == "super":
        base = here[:-1]
        segs = segs[1:]
        while segs and segs[0] == "super":
            base, segs = base[:-1], segs[1:]
    elif segs[0] == "self":
        base, segs = here, segs[1:]
    elif here + (segs[0],) in modules:
        base = here
    else:
        return None  # an external crate or std
    best = None
    for k in range(len(segs) + 1):
        candidate = base + tuple(segs[:k])
        if candidate in modules:
            best = candidate
    return best


def graph(root):
    files = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".rs")]
    modules = {module_of(root, f): f for f in files}
    edges = set()
    for mod, path in modules.items():
        text = strip_tests(open(path, encoding="utf-8").read())
        for named in paths_named(text):
            target = resolve(named, mod, modules)
            if target is None or target == mod or target == ():
                continue
            # A parent naming its own child (re-exports, dispatch) is ownership, not a
            # dependency: the child must still not name the parent back.
            if target[: len(mod)] == mod and mod != ():
                continue
            if mod == ():
                continue  # lib.rs declares everything
            edges.add((mod, target))
    return edges


def cycles(edges):
    """Strongly connected components with more than one node (Tarjan)."""
    nodes = sorted({n for e in edges for n in e})
    adj = {n: sorted(b for a, b in edges if a == n) for n in nodes}
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in adj[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main(argv):
    top = "--top" in argv
    args = [a for a in argv[1:] if a != "--top"]
    root = args[0] if args else "crates/sluice-proxy/src"
    edges = graph(root)
    name = lambda m: "::".join(m)
    if top:
        shown = sorted({(a[0], b[0]) for a, b in edges if a[0] != b[0]})
        for a, b in shown:
            print(f"{a} -> {b}")
        found = cycles({((a,), (b,)) for a, b in shown})
    else:
        for a, b in sorted(edges):
            print(f"{name(a)} -> {name(b)}")
        found = cycles(edges)
    for comp in found:
        print("CYCLE: " + " <-> ".join(name(m) for m in sorted(comp)), file=sys.stderr)
    if found:
        return 1
    print(f"no cycle ({len(edges)} edges between {len({n for e in edges for n in e})} modules)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
