"""The core's modules form a layered graph: no import cycle among trt_kernels modules.

The modules are those of trt_kernels and its subpackages (cli, eager, sources, testing),
trt_kernels.plugins and trt_kernels.converters. Module-level imports (including ``if`` / ``try`` blocks at module level,
excluding imports inside functions) are read from the sources with ``ast``, resolved to
``trt_kernels.*`` module names, and searched for cycles. A cycle means two modules each need the
other while importing, which breaks as soon as the import order changes; one of them must own
what both need. A second scan counts the imports inside functions too and reports every cycle.
Imports made by name at run time (``importlib.import_module``: trt_kernels.testing's lazy
attributes) are not seen.
"""

import ast

from support import ROOT

# every package of the distribution; the testing package's subfolders trt_emulator/ and shim/ are not modules of
# trt_kernels.testing (files loaded by path as ``tensorrt.tensorrt`` / ``tensorrt``) and are left out
PACKAGES = {"trt_kernels": ROOT / "trt_kernels", "trt_kernels.cli": ROOT / "trt_kernels" / "cli",
            "trt_kernels.library": ROOT / "trt_kernels" / "library",
            "trt_kernels.eager": ROOT / "trt_kernels" / "eager",
            "trt_kernels.sources": ROOT / "trt_kernels" / "sources",
            "trt_kernels.testing": ROOT / "trt_kernels" / "testing",
            "trt_kernels.plugins": ROOT / "plugins", "trt_kernels.converters": ROOT / "converters"}


def test_every_package_is_scanned():
    """A new subpackage of trt_kernels is added to PACKAGES (or the scan would not see its imports)."""
    found = {p.parent for p in (ROOT / "trt_kernels").glob("*/__init__.py")}
    assert found == {f for n, f in PACKAGES.items() if f.parent == ROOT / "trt_kernels"}


def _modules():
    mods = {}
    for pkg, folder in PACKAGES.items():
        for path in sorted(folder.glob("*.py")):
            name = pkg if path.stem == "__init__" else f"{pkg}.{path.stem}"
            mods[name] = path
    return mods


def _module_level_imports(tree):
    """Import nodes executed when the module is imported (not those inside def / class bodies)."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []) or []:
                    stack.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])


def _targets(name, path, node, known):
    pkg = name if path.stem == "__init__" else name.rsplit(".", 1)[0]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in known]
    if node.level:
        base = pkg
        for _ in range(node.level - 1):
            base = base.rsplit(".", 1)[0]
        base = f"{base}.{node.module}" if node.module else base
    else:
        base = node.module or ""
    out = []
    for a in node.names:  # `from . import registry` names a module; `from .spec import X` the module spec
        if f"{base}.{a.name}" in known:
            out.append(f"{base}.{a.name}")
        elif base in known:
            out.append(base)
    return out


def import_graph(all_levels=False):
    mods = _modules()
    graph = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        deps = set()
        nodes = ([n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))] if all_levels
                 else _module_level_imports(tree))
        for node in nodes:
            deps.update(t for t in _targets(name, path, node, mods) if t != name)
        graph[name] = deps | parent_packages(name, deps, mods)
    return graph


def parent_packages(name, deps, known):
    """The packages ``name`` imports implicitly: importing ``pkg.sub`` runs ``pkg/__init__.py`` first. (From
    inside ``pkg`` that package is already being imported, so only imports from outside count: plugins/
    importing trt_kernels.converters while converters/ imported trt_kernels.plugins.qdp was such a cycle.)"""
    out = set()
    for t in deps:
        parent = t.rsplit(".", 1)[0]
        if parent in known and parent != name and not name.startswith(parent + "."):
            out.add(parent)
    return out


def find_cycle(graph):
    """One import cycle as a list of module names, or None."""
    state = {}

    def visit(n, path):
        state[n] = "active"
        for m in sorted(graph.get(n, ())):
            if state.get(m) == "active":
                return path[path.index(m):] + [m]
            if m not in state:
                found = visit(m, path + [m])
                if found:
                    return found
        state[n] = "done"
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n, [n])
            if found:
                return found
    return None


def cycles(graph):
    """Every import cycle, as the sorted module sets of the graph's strongly connected components of more
    than one module (each module of such a set reaches every other one through imports)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), set()

    def connect(n):
        index[n] = low[n] = len(index)
        stack.append(n)
        on_stack.add(n)
        for m in sorted(graph.get(n, ())):
            if m not in index:
                connect(m)
                low[n] = min(low[n], low[m])
            elif m in on_stack:
                low[n] = min(low[n], index[m])
        if low[n] == index[n]:
            component = []
            while True:
                m = stack.pop()
                on_stack.discard(m)
                component.append(m)
                if m == n:
                    break
            if len(component) > 1:
                out.add(tuple(sorted(component)))

    for n in sorted(graph):
        if n not in index:
            connect(n)
    return out


def describe(graph, found):
    """Each cycle's modules, and one path around it."""
    lines = []
    for mods in sorted(found):
        inside = {n: graph[n] & set(mods) for n in mods}
        lines.append(f"{list(mods)}: " + " -> ".join(find_cycle(inside)))
    return "\n".join(lines)


def test_no_import_cycle_among_trt_kernels_modules():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cuda_kernel_builds_on_the_dispatcher_and_loads_the_launch_code_at_the_first_launch():
    graph, every = import_graph(), import_graph(all_levels=True)
    assert "trt_kernels.eager.dispatcher" in graph["trt_kernels.eager.cuda_kernel"]
    assert "trt_kernels.eager.cuda_kernel" in graph["trt_kernels.library.definition"]
    # the launch-code generator (and through it the CUDA launch modules) is imported at the first launch
    for m in ("trt_kernels.eager.cuda_kernel", "trt_kernels.library.definition"):
        assert "trt_kernels.eager.fastpath" not in graph[m]
    assert "trt_kernels.eager.fastpath" in every["trt_kernels.eager.cuda_kernel"]
    for m in ("trt_kernels.eager.fastpath", "trt_kernels.eager.dispatcher"):
        assert "trt_kernels.eager.cuda_kernel" not in every[m] and "trt_kernels.library.definition" not in every[m]


def test_the_scan_sees_a_cycle(tmp_path):
    """The detector itself: a graph with a cycle is reported, one without is not."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_scan_sees_every_cycle():
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a", "c"}, "g": set()}
    assert cycles(graph) == {("a", "b"), ("c", "d", "e")}
    assert describe(graph, cycles(graph)) == "['a', 'b']: a -> b -> a\n['c', 'd', 'e']: c -> d -> e -> c"
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == set()


def test_importing_a_submodule_from_outside_its_package_depends_on_the_package():
    known = {"p", "p.a", "p.b", "q"}
    assert parent_packages("q", {"p.a"}, known) == {"p"}
    assert parent_packages("p.b", {"p.a"}, known) == set()  # p is already being imported
    assert cycles({"p": {"q"}, "q": {"p.a"} | parent_packages("q", {"p.a"}, known), "p.a": set()}) == {("p", "q")}


def test_function_level_imports_are_not_module_level():
    tree = ast.parse("import os\ntry:\n    import json\nexcept ImportError:\n    pass\n"
                     "def f():\n    import sys\n")
    assert sorted(n.names[0].name for n in _module_level_imports(tree)) == ["json", "os"]


def test_no_cycle_through_function_level_imports_either():
    """Lazy imports inside functions hide a cycle from import order but not from the design:
    fastpath and torch_op used to import each other that way. With every import counted (at every
    level, inside functions too), the graph is still acyclic; a failure lists every cycle."""
    graph = import_graph(all_levels=True)
    found = cycles(graph)
    assert not found, "import cycles (counting imports inside functions):\n" + describe(graph, found)


SOURCES = {"cuda_source.py", "ptx_source.py", "triton_source.py", "kernel_source.py"}
# what telling the kernel sources apart looks like: a flag on the op, a probe for a method only one source
# has, a type test, or a comparison of the entry point's name
SOURCE_TESTS = (r"\.ptx is (not )?None", r"getattr\(\s*(self\.)?kop\b", r"isinstance\([^)]*(Cuda|Ptx|Triton)Source",
                r"entry_point\s*[!=]=", r"\bTritonKernelOp\b")


def test_nothing_outside_the_sources_asks_which_source_an_op_has():
    """CUDA C++, PTX and Triton are three KernelSources behind one protocol: the op record, the launches,
    the TensorRT side and the command line read Binary / KernelImage fields and never branch on the kind."""
    import re

    found = []
    for folder in PACKAGES.values():
        for path in sorted(folder.glob("*.py")):
            if path.name in SOURCES:
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if any(re.search(p, line) for p in SOURCE_TESTS):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "source-kind tests outside the sources:\n" + "\n".join(found)


def test_the_source_scan_sees_a_source_test():
    import re

    for line in ("if kop.ptx is not None:", "own = getattr(kop, 'launch_into', None)",
                 "isinstance(kop.source, TritonSource)", "if kop.source.entry_point == 'ptx_op':"):
        assert any(re.search(p, line) for p in SOURCE_TESTS), line
