"""The package's layout, read from its source with ast (nothing is imported): no two modules of
sheaf need each other, and the command line uses the library the way any user does."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Set

PACKAGE = Path(__file__).resolve().parents[1] / "sheaf"


class Import(NamedTuple):
    """One import statement's target: the module, and the name taken from it ("" for the module
    itself, or for a submodule taken by name)."""

    module: str
    name: str
    line: int


def modules_of(package: Path) -> Dict[str, Path]:
    """Each module of the package by its dotted name (a subpackage under its own name)."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def imports_of(module: str, path: Path, modules: Dict[str, Path]) -> Iterator[Import]:
    """Every import in the module's file, wherever it stands: at the top, under `if
    TYPE_CHECKING:` or inside a function. Two modules that need each other only once a function
    runs, or only for the type checker, still form a cycle: moving an import into a function
    hides one, it does not remove it."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(alias.name, "", node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:   # from . import x, from .x import y, from .. import z
                base = package[:len(package) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:
                    yield Import(f"{source}.{alias.name}", "", node.lineno)
                else:
                    yield Import(source, alias.name, node.lineno)


def import_graph(package: Path) -> Dict[str, Dict[str, int]]:
    """For each module, the package's modules it imports, with the line of the first import."""
    modules = modules_of(package)
    graph: Dict[str, Dict[str, int]] = {module: {} for module in modules}
    for module, path in modules.items():
        for target in imports_of(module, path, modules):
            if target.module in modules and target.module != module:
                graph[module].setdefault(target.module, target.line)
    return graph


def cycles(graph: Dict[str, Dict[str, int]]) -> List[List[str]]:
    """The groups of modules that reach each other through imports (strongly connected components
    of more than one module, Tarjan's algorithm), each sorted, in the order found."""
    order: Dict[str, int] = {}
    lowest: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(module: str) -> None:
        order[module] = lowest[module] = len(order)
        stack.append(module)
        on_stack.add(module)
        for imported in graph[module]:
            if imported not in order:
                visit(imported)
                lowest[module] = min(lowest[module], lowest[imported])
            elif imported in on_stack:
                lowest[module] = min(lowest[module], order[imported])
        if lowest[module] == order[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


def described(group: List[str], graph: Dict[str, Dict[str, int]]) -> str:
    edges = [f"{module} imports {imported} (line {line})"
             for module in group for imported, line in sorted(graph[module].items()) if imported in group]
    return "; ".join(edges)


def test_no_module_of_sheaf_imports_one_that_imports_it_back():
    graph = import_graph(PACKAGE)
    # The walk really reads the package: the layers below every list are there.
    assert "sheaf._ffi" in graph["sheaf.errors"] and "sheaf.errors" in graph["sheaf.client"]
    assert "sheaf.cli.parser" in graph["sheaf.cli"]
    found = cycles(graph)
    assert not found, "import cycles (move what both need into a module below them):\n" + "\n".join(
        described(group, graph) for group in found)


def test_a_cycle_is_found_through_a_function_and_type_checking(tmp_path):
    package = tmp_path / "loop"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("from .a import A\n")
    (package / "a.py").write_text("from . import b\nA = 1\n")
    (package / "b.py").write_text("def later():\n    from .inner.c import C\n")
    (package / "inner" / "__init__.py").write_text("")
    (package / "inner" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                            "    from ..a import A\nC = 1\n")
    (package / "d.py").write_text("import loop.a\n")   # imports into the cycle, is not part of it
    assert cycles(import_graph(package)) == [["loop.a", "loop.b", "loop.inner.c"]]


def is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def in_command_line(module: str) -> bool:
    return module == "sheaf.cli" or module.startswith("sheaf.cli.")


def test_the_command_line_uses_the_public_api_alone():
    # sheaf.cli is a user of the library like any other: no private module or name of sheaf
    # outside it (the ctypes declarations of _ffi, the run machinery of _run), so what the
    # command does, a Python user can do too, and the library's insides can change under it.
    modules = modules_of(PACKAGE)
    used: Set[str] = set()
    private: List[str] = []
    for module, path in modules.items():
        if not in_command_line(module):
            continue
        for target in imports_of(module, path, modules):
            if target.module.split(".")[0] != "sheaf" or in_command_line(target.module):
                continue
            used.add(target.module)
            if any(is_private(part) for part in target.module.split(".") + [target.name]):
                shown = target.module + (f".{target.name}" if target.name else "")
                private.append(f"{path.relative_to(PACKAGE.parent)}:{target.line} imports {shown}")
    assert "sheaf" in used   # the command does reach the library
    assert not private, "the command line imports what is private to the library:\n" + "\n".join(private)


# ---- the command line touches no private member of the library's objects ------------------------

#: Members of every NamedTuple that begin with "_" but are its public API (collections.namedtuple).
NAMEDTUPLE_API = frozenset({"_replace", "_asdict", "_make", "_fields", "_field_defaults"})


def private_members_of_library(package: Path) -> Set[str]:
    """The private names of the library (sheaf outside sheaf.cli), from its source: its private
    modules, the private names each module defines, and the private methods, class attributes
    and instance attributes (``self._x = ...``) of its classes: what ``client._x`` or
    ``api._x`` could reach."""
    names: Set[str] = set()
    for module, path in modules_of(package).items():
        if in_command_line(module):
            continue
        names.update(part for part in module.split(".") if is_private(part))
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
    return {name for name in names if is_private(name) and name != "_"} - NAMEDTUPLE_API


class PrivateUse(NamedTuple):
    line: int
    text: str


def private_uses(source: str, private: Set[str]) -> List[PrivateUse]:
    """Where `source` reaches one of the `private` names on an object other than its own `self`
    or `cls` (``client._sync_list(...)``, ``getattr(client, "_handle")``); a name the library
    does not have (argparse's ``parser._actions``) is not the library's to guard."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in private:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(PrivateUse(node.lineno, ast.unparse(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and node.args[1].value in private):
            found.append(PrivateUse(node.lineno, ast.unparse(node)))
    return sorted(found)


def test_the_command_line_calls_no_private_member_of_a_client_or_of_sheaf():
    # Importing only public modules is not enough: `client._sync_list(...)` imports nothing. What
    # the command needs of a Client is a public, documented method (sync_key, fetch_partition_to).
    private = private_members_of_library(PACKAGE)
    # The walk really reads the library: the client's insides are there.
    assert {"_new_run", "_partition_run", "_handle", "_ffi", "_run"} <= private
    found = []
    for module, path in modules_of(PACKAGE).items():
        if in_command_line(module):
            found += [f"{path.relative_to(PACKAGE.parent)}:{use.line}: {use.text}"
                      for use in private_uses(path.read_text(), private)]
    assert not found, "the command line reaches private members of the library:\n" + "\n".join(found)


def test_a_private_member_reached_on_a_client_is_found():
    source = ("def run(client, parser, api, entry):\n"
              "    client._new_run('/x', None, {}, None)\n"
              "    key = getattr(client, '_handle')\n"
              "    api._ffi.lib\n"
              "    parser._actions\n"             # argparse's, not the library's
              "    entry._replace(each=())\n"      # a NamedTuple's public API
              "class Writer:\n"
              "    def write(self):\n"
              "        self._new_run()\n")         # its own member
    assert [use.line for use in private_uses(source, {"_new_run", "_handle", "_ffi"})] == [2, 3, 4]
