#!/usr/bin/env python3
"""Writes the Swift API reference page: every public type of the package's `Sheaf` product (the
`Sheaf` and `SheafCurl` modules) with its public members and `///` doc comments, grouped by the
source folder that holds it.

What is public, and each declaration as the compiler prints it, comes from the symbol graphs
swiftc emits while it type-checks the two modules (`-emit-module -emit-symbol-graph`; no code is
generated, so it takes seconds, not a build). They are kept in build/docs-swift/ under a hash of
the sources and the compiler's version, and made again only when either changes. The flags
follow Package.swift (Swift 6 language mode, package name "sheaf"); a source that does not
type-check with them fails this script with the compiler's message.

DocC could render the same symbol graphs (`docc convert`), but as a JavaScript application that
needs a web server, outside this site's search and link checks; this page is plain Markdown.

usage: docs/gen_swift_reference.py [--output docs/reference/swift.md] [--cache build/docs-swift]
       (paths relative to the repository root)
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference_page  # noqa: E402 - beside this script

# The product's modules in dependency order, each with its sources and the C modules it imports.
MODULES = (("Sheaf", "Sources/Sheaf", ()), ("SheafCurl", "Sources/SheafCurl", ("CCurl",)))
C_MODULES = {"CCurl": "Sources/CCurl/include/CCurl.h"}
TYPE_KINDS = {"swift.class", "swift.struct", "swift.enum", "swift.protocol", "swift.actor", "swift.typealias"}
# Conformances every type has, or that say nothing to a caller.
QUIET_CONFORMANCES = {"Copyable", "Escapable", "SendableMetatype", "BitwiseCopyable"}


def swift_sources() -> List[Path]:
    """The modules' sources, relative to the repository root (the working directory)."""
    return sorted(path for _, folder, _ in MODULES for path in Path(folder).rglob("*.swift"))


def swiftc() -> str:
    found = shutil.which("swiftc")
    if not found:
        sys.exit("gen_swift_reference: no swiftc on PATH: the Swift reference is made from the symbol "
                 "graphs it emits (building Sheaf needs the toolchain on PATH anyway)")
    return found


def symbol_graphs(cache: Path) -> Path:
    """The folder holding the modules' symbol graphs, made unless the cache has them."""
    compiler = swiftc()
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=True).stdout
    digest = hashlib.sha256(version.encode())
    for path in swift_sources() + [Path(header) for header in C_MODULES.values()]:
        digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    target = cache / digest.hexdigest()[:16]
    if (target / "complete").exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="graphs-", dir=cache))
    for module_map_module, header in C_MODULES.items():
        (work / module_map_module).mkdir()
        (work / module_map_module / "module.modulemap").write_text(
            f'module {module_map_module} {{\n  umbrella header "{Path(header).resolve()}"\n  export *\n}}\n')
    for module, folder, imports in MODULES:
        command = [compiler, "-emit-module", "-module-name", module, "-package-name", "sheaf",
                   "-parse-as-library", "-swift-version", "6", "-I", str(work),
                   "-module-cache-path", str(cache / "module-cache"),
                   "-emit-module-path", str(work / f"{module}.swiftmodule"),
                   "-emit-symbol-graph", "-emit-symbol-graph-dir", str(work),
                   "-symbol-graph-minimum-access-level", "public"]
        for imported in imports:
            command += ["-I", str(work / imported)]
        command += [str(path) for path in swift_sources() if str(path).startswith(folder + "/")]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            sys.stderr.write(result.stdout + result.stderr)
            shutil.rmtree(work, ignore_errors=True)
            sys.exit(f"gen_swift_reference: swiftc could not type-check {module} (above)")
    (work / "complete").write_text("")
    for old in cache.glob("*"):
        if old.is_dir() and old.name not in ("module-cache", work.name):
            shutil.rmtree(old, ignore_errors=True)
    work.rename(target)
    return target


class Graph:
    """The symbols of every module's graph, with who is a member of whom."""

    def __init__(self, folder: Path) -> None:
        self.symbols: Dict[str, Dict[str, Any]] = {}
        self.members: Dict[str, List[str]] = defaultdict(list)
        self.conformances: Dict[str, List[str]] = defaultdict(list)
        self.extended: Dict[str, str] = {}   # a type of another module -> its name
        for module, _, _ in MODULES:
            # Module.symbols.json, and Module@Other.symbols.json for its extensions of Other's types.
            for path in sorted([folder / f"{module}.symbols.json", *folder.glob(f"{module}@*.symbols.json")]):
                graph = json.loads(path.read_text(encoding="utf-8"))
                for symbol in graph["symbols"]:
                    self.symbols[symbol["identifier"]["precise"]] = symbol
                for relation in graph["relationships"]:
                    if relation["kind"] == "memberOf" and "::SYNTHESIZED::" not in relation["source"] \
                            and "sourceOrigin" not in relation:
                        self.members[relation["target"]].append(relation["source"])
                        if "targetFallback" in relation:
                            self.extended[relation["target"]] = relation["targetFallback"]
                    elif relation["kind"] == "conformsTo":
                        name = relation.get("targetFallback", relation["target"]).split(".")[-1]
                        target = self.symbols.get(relation["target"])
                        name = ".".join(target["pathComponents"]) if target else name
                        if name not in QUIET_CONFORMANCES:
                            self.conformances[relation["source"]].append(name)

    def types(self) -> List[Dict[str, Any]]:
        return [symbol for symbol in self.symbols.values() if symbol["kind"]["identifier"] in TYPE_KINDS]


def path_name(symbol: Dict[str, Any]) -> str:
    return ".".join(symbol["pathComponents"])


def anchor(text: str) -> str:
    """An id for a heading: letters, digits, "." and "-" ("SheafClient.fetchAll-path-decoder" for
    fetchAll(_:path:decoder:)). No "_": in "{#a-_-b}" Markdown would read "_-_" as emphasis."""
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


def declaration(symbol: Dict[str, Any]) -> str:
    return "".join(fragment["spelling"] for fragment in symbol["declarationFragments"])


def group_of(symbol: Dict[str, Any]) -> str:
    """"Sheaf: Client" for Sources/Sheaf/Client/..., "SheafCurl" for Sources/SheafCurl/..."""
    path = symbol.get("location", {}).get("uri", "").split("Sources/", 1)[-1].split("/")
    return f"{path[0]}: {path[1]}" if len(path) > 2 else path[0]


def doc_markdown(symbol: Dict[str, Any], link: reference_page.Linker) -> List[str]:
    """A `///` comment, Markdown already: DocC's ``Symbol`` links resolved, stray "<" escaped,
    its lists laid out as Python-Markdown reads them."""
    lines = _python_markdown_lists([line["text"] for line in symbol.get("docComment", {}).get("lines", [])])
    text = "\n".join(lines).strip()
    if not text:
        return []
    def code(part: str) -> str:
        if part.startswith("```"):
            return part
        if part.startswith("``"):   # DocC's symbol link: ``Type`` or ``Type/member``
            return reference_page.name(part[2:-2].replace("/", "."), link)
        # A public type's name in a code span is as good as DocC's ``Type``: linked too.
        return reference_page.name(part[1:-1], link) if link(part[1:-1]) else part

    parts = re.split(r"(```.*?```|``[^`\n]+``|`[^`\n]*`)", text, flags=re.S)
    text = "".join(code(part) if index % 2 else part.replace("<", "&lt;") for index, part in enumerate(parts))
    return [text]


def _python_markdown_lists(lines: List[str]) -> List[str]:
    """DocC (CommonMark) lets a list start right under a paragraph and nests it by two spaces;
    Python-Markdown wants a blank line before it and four spaces a level."""
    out: List[str] = []
    in_list = False
    for line in lines:
        stripped = line.lstrip(" ")
        item = stripped.startswith(("- ", "* ", "+ "))
        if item and not in_list and out and out[-1].strip():
            out.append("")
        in_list = (in_list or item) and bool(stripped)
        out.append(" " * 2 * (len(line) - len(stripped)) + stripped)
    return out


def render(graph: Graph) -> str:
    anchors: Dict[str, str] = {path_name(symbol): anchor(path_name(symbol)) for symbol in graph.types()}

    def link(text: str) -> Optional[str]:
        return f"#{anchors[text]}" if text in anchors else None

    grouped: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
    for symbol in graph.types():
        grouped[group_of(symbol)].append(symbol)
    out = ["# Swift API reference",
           "Generated by `docs/gen_swift_reference.py` from the symbol graphs swiftc emits for the "
           "`Sheaf` and `SheafCurl` modules (the package's `Sheaf` product): every public type, with "
           "its public members and `///` comments, grouped by the source folder that holds it. To "
           "change this page, change the comments. The [Swift guide](../guides/swift.md) shows the API "
           "at work."]
    used: Dict[str, int] = defaultdict(int)
    for group in sorted(grouped, key=lambda name: (not name.startswith("Sheaf:"), name)):
        out.append(f"## {reference_page.escape(group)}")
        for symbol in sorted(grouped[group], key=path_name):
            name = path_name(symbol)
            out.append(f"### {reference_page.escape(name)} {{#{anchors[name]}}}")
            out.append(reference_page.fenced([declaration(symbol)], "swift"))
            out += doc_markdown(symbol, link)
            conformances = sorted(set(graph.conformances.get(symbol["identifier"]["precise"], [])))
            if conformances:
                out.append("Conforms to " + ", ".join(reference_page.name(item, link) for item in conformances) + ".")
            out += members(graph, symbol["identifier"]["precise"], name, link, used)
    extensions = [(name, target) for target, name in graph.extended.items() if target not in graph.symbols]
    if extensions:
        out.append("## Extensions of other modules' types")
        for name, target in sorted(extensions):
            out.append(f"### {reference_page.escape(name)} {{#{anchor(name)}}}")
            out += members(graph, target, name.split(".")[-1], link, used)
    return "\n\n".join(out) + "\n"


def members(graph: Graph, precise: str, owner: str, link: reference_page.Linker, used: Dict[str, int]) -> List[str]:
    out: List[str] = []
    symbols = [graph.symbols[member] for member in graph.members.get(precise, []) if member in graph.symbols]
    symbols = [symbol for symbol in symbols if symbol["kind"]["identifier"] not in TYPE_KINDS]
    order = {"swift.enum.case": 0, "swift.init": 1, "swift.type.property": 2, "swift.property": 3,
             "swift.type.method": 4, "swift.method": 5, "swift.subscript": 6, "swift.func.op": 7}
    for symbol in sorted(symbols, key=lambda item: (order.get(item["kind"]["identifier"], 9),
                                                    item["pathComponents"][-1])):
        title = symbol["pathComponents"][-1]
        base = anchor(f"{owner}.{title}")
        used[base] += 1
        member_anchor = base if used[base] == 1 else f"{base}-{used[base]}"
        out.append(f"#### {reference_page.escape(owner)}.{reference_page.escape(title)} {{#{member_anchor}}}")
        out.append(reference_page.fenced([declaration(symbol)], "swift"))
        out += doc_markdown(symbol, link)
    return out


def main() -> int:
    arguments = reference_page.arguments(__doc__, "docs/reference/swift.md",
                                        ("--cache", "build/docs-swift", "where the symbol graphs are kept"))
    graph = Graph(symbol_graphs(arguments.cache.resolve()))
    return reference_page.finish("gen_swift_reference", arguments.output, render(graph), [],
                                f"{len(graph.types())} public types")

if __name__ == "__main__":
    sys.exit(main())
