#!/usr/bin/env python3
"""Writes the C API reference page from include/sheaf.h: every SHEAF_API function, type, enum and
macro with its doc comment, grouped by the header's "/* ---- Section ---- */" markers, in the
header's order. The header's opening comment (thread safety, memory, errors) opens the page, and
a section's opening comment (a plain /* */ right after its marker) opens the section. The
experimental tier, include/sheaf/experimental.h, follows in an Experimental part of its own,
opened by that header's opening comment (its promise); names link across both.

The header is read as text, not compiled: its layout is regular (the abi_header test compiles it
as C and C++), and a line this script does not understand is an error rather than a gap in the
page. Exits 1, naming each place, when a SHEAF_API function has no doc comment, when a doc
comment documents nothing, or when a line is not understood.

usage: docs/gen_c_reference.py [--header include/sheaf.h]
                               [--experimental include/sheaf/experimental.h]
                               [--output docs/reference/c.md]
       (paths relative to the repository root; an --experimental header that does not exist is
       left out)
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference_page  # noqa: E402 - beside this script


# A name of the C API, wherever prose mentions one.
C_NAME = re.compile(r"\b(?:sheaf|SHEAF)_[A-Za-z0-9_]*[A-Za-z0-9]")
_SECTION = re.compile(r"^/\*\s*-{3,}\s*(.*?)\s*-{3,}\s*\*/$")
_DEFINE = re.compile(r"^#\s*define\s+(\w+)(\([^)]*\))?\s*(.*)$")
_ENUM_VALUE = re.compile(r"^(\w+)\s*(?:=\s*([^,/]+?))?\s*,?\s*(?:/\*\*<\s*(.*?)\s*\*/)?$")
_FIELD = re.compile(r"^(.+?[\s*])(\w+)\s*;\s*(?:/\*\*<\s*(.*?)\s*\*/)?$")
#: A member that is a function pointer: "void (*release)(struct ArrowSchema *);".
_FUNCTION_FIELD = re.compile(r"^(.+?)\(\s*\*\s*(\w+)\s*\)\s*(\(.*\))\s*;\s*(?:/\*\*<\s*(.*?)\s*\*/)?$")
_CALLBACK = re.compile(r"^typedef\s+(.+?)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)\s*;$")
_HANDLE = re.compile(r"^typedef\s+struct\s+(\w+)\s+(\w+)\s*;$")
_SKIPPED = re.compile(r'^(#\s*(include|ifdef|ifndef|endif)\b.*|extern "C" \{|\})$')


@dataclass
class Member:
    """An enum value or a struct field."""

    name: str
    detail: str   # the value, or the field's type
    doc: str


@dataclass
class Entry:
    kind: str     # "function", "macro", "enum", "struct", "handle", "callback"
    name: str
    declaration: str
    doc: str
    line: int
    members: List[Member] = field(default_factory=list)


@dataclass
class Section:
    title: str
    entries: List[Entry] = field(default_factory=list)
    intro: str = ""   # the section's opening comment, a plain /* */ before its first entry


@dataclass
class Header:
    overview: str
    sections: List[Section]
    problems: List[str]


def comment_text(raw: str) -> str:
    """The text of a comment: its /* */ or /** */ markers and each line's leading " * " removed."""
    raw = re.sub(r"^/\*\*?<?", "", raw.strip())
    raw = re.sub(r"\*/$", "", raw)
    lines = [re.sub(r"^\s*\* ?", "", line) if re.match(r"^\s*\*(\s|$)", line) else line
             for line in raw.splitlines()]
    return "\n".join(lines).strip("\n")


def parse(path: Path) -> Header:
    lines = path.read_text(encoding="utf-8").splitlines()
    problems: List[str] = []
    sections = [Section("Preamble")]
    overview = ""
    doc: Optional[str] = None      # the doc comment waiting for its declaration
    doc_line = 0
    guard: Optional[str] = None    # the name an #ifndef just tested (an include guard's #define)
    index = 0

    def take_until(end: str) -> str:
        """The lines from `index` through the first one that ends with `end`, joined."""
        nonlocal index
        start = index
        while not lines[index].rstrip().endswith(end):
            index += 1
            if index == len(lines):
                problems.append(f"{path}:{start + 1}: no '{end}' after this line")
                return ""
        index += 1
        return "\n".join(lines[start:index])

    def add(kind: str, name: str, declaration: str, line: int, members: Optional[List[Member]] = None) -> None:
        nonlocal doc
        if kind == "function" and doc is None:
            problems.append(f"{path}:{line}: SHEAF_API function {name} has no doc comment (/** ... */ above it)")
        sections[-1].entries.append(Entry(kind, name, declaration, doc or "", line, members or []))
        doc = None

    while index < len(lines):
        line_number = index + 1
        stripped = lines[index].strip()
        if doc is not None and not stripped:
            problems.append(f"{path}:{doc_line}: this doc comment documents nothing (a blank line follows it)")
            doc = None
        if not stripped:
            index += 1
        elif _SECTION.match(stripped):
            sections.append(Section(_SECTION.match(stripped).group(1)))
            index += 1
        elif stripped.startswith("/**"):
            doc_line = line_number
            doc = comment_text(take_until("*/"))
        elif stripped.startswith("/*"):
            text = comment_text(take_until("*/"))
            if not overview and not any(section.entries for section in sections):
                overview = text   # the header's opening comment
            elif len(sections) > 1 and not sections[-1].entries and not sections[-1].intro:
                sections[-1].intro = text   # a section's opening comment
        elif stripped.startswith("#"):
            index += 1
            define = _DEFINE.match(stripped)
            if define is None:
                if not _SKIPPED.match(stripped):
                    problems.append(f"{path}:{line_number}: not understood: {stripped}")
                guard = stripped.split()[1] if stripped.startswith("#ifndef") else None
                continue
            name = define.group(1)
            text = stripped
            while text.endswith("\\"):
                text = text[:-1].rstrip() + " " + lines[index].strip()
                index += 1
            if name == guard and not define.group(3):
                guard = None
                continue   # an include guard
            guard = None
            add("macro", name, " ".join(text.split()), line_number)
        elif stripped.startswith("SHEAF_API"):
            declaration = " ".join(take_until(";").split())
            match = re.search(r"(\w+)\s*\(", declaration)
            add("function", match.group(1) if match else "?", declaration.replace("SHEAF_API ", "", 1), line_number)
        elif re.match(r"^(typedef\s+(enum|struct)|struct)\s+\w+\s*\{$", stripped):
            # "typedef struct x {" ... "} x;", or a plain "struct x {" ... "};" (the Arrow structs).
            plain = stripped.startswith("struct")
            kind = "struct" if plain else stripped.split()[1]
            closing = r"^\}\s*;$" if plain else r"^\}\s*\w+\s*;$"
            end = index + 1
            while end < len(lines) and not re.match(closing, lines[end].strip()):
                end += 1
            if end == len(lines):
                problems.append(f"{path}:{line_number}: no closing '}}{'' if plain else ' name'};' for this {kind}")
                break
            members = _members(kind, lines[index + 1:end], path, line_number + 1, problems)
            name = stripped.split()[1] if plain else lines[end].strip()[1:-1].strip()
            add(kind, name, stripped.replace(" {", ""), line_number, members)
            index = end + 1
        elif stripped.startswith("typedef"):
            declaration = " ".join(take_until(";").split())
            handle = _HANDLE.match(declaration)
            callback = _CALLBACK.match(declaration)
            if handle:
                add("handle", handle.group(2), declaration, line_number)
            elif callback:
                add("callback", callback.group(2), declaration, line_number)
            else:
                problems.append(f"{path}:{line_number}: typedef not understood: {declaration}")
        elif _SKIPPED.match(stripped):
            index += 1
        else:
            problems.append(f"{path}:{line_number}: not understood: {stripped}")
            index += 1
    return Header(overview, [section for section in sections if section.entries], problems)


def _members(kind: str, body: List[str], path: Path, first_line: int, problems: List[str]) -> List[Member]:
    members: List[Member] = []
    doc = ""   # a /** */ line above a member documents it
    for offset, line in enumerate(body):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("/**") and stripped.endswith("*/") and not stripped.startswith("/**<"):
            doc = comment_text(stripped)
            continue
        function = _FUNCTION_FIELD.match(stripped) if kind != "enum" else None
        if function is not None:
            members.append(Member(function.group(2), f"{' '.join(function.group(1).split())} (*){function.group(3)}",
                                  function.group(4) or doc))
            doc = ""
            continue
        match = (_ENUM_VALUE if kind == "enum" else _FIELD).match(stripped)
        if match is None:
            problems.append(f"{path}:{first_line + offset}: {kind} member not understood: {stripped}")
            continue
        if kind == "enum":
            members.append(Member(match.group(1), (match.group(2) or "").strip(), match.group(3) or doc))
        else:
            members.append(Member(match.group(2), " ".join(match.group(1).split()), match.group(3) or doc))
        doc = ""
    return members


# ---- the page ----------------------------------------------------------------------------------

def anchors(header: Header, *more: Header) -> Dict[str, str]:
    """Every name the page documents, with its anchor: entries, and each enum value (of `header`
    and of each of `more`: the experimental tier's)."""
    found: Dict[str, str] = {}
    for section in [section for each in (header, *more) for section in each.sections]:
        for entry in section.entries:
            found[entry.name] = entry.name
            if entry.kind == "enum":
                for member in entry.members:
                    found[member.name] = member.name
    return found


def linker_for(names: Dict[str, str], page: str = "") -> reference_page.Linker:
    """Links a name of the C API (a function may be written with "()") to `page`#its anchor."""
    def link(text: str) -> Optional[str]:
        bare = text[:-2] if text.endswith("()") else text
        return f"{page}#{names[bare]}" if bare in names else None
    return link


def doc_markdown(text: str, link: reference_page.Linker) -> List[str]:
    """A doc comment as Markdown paragraphs: prose linked and escaped, indented runs as code."""
    out: List[str] = []
    for kind, lines in reference_page.blocks(text):
        if kind == "prose":
            out.append(reference_page.prose("\n".join(lines), link, C_NAME))
        else:
            looks_like_code = any(line.rstrip().endswith((");", "{", "}")) for line in lines)
            out.append(reference_page.fenced(lines, "c" if looks_like_code else "text"))
    return out


def overview_markdown(text: str, link: reference_page.Linker) -> List[str]:
    """The header's opening comment: its underlined titles ("Memory" over "------") as headings."""
    out: List[str] = []
    chunk: List[str] = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        underline = lines[index + 1] if index + 1 < len(lines) else ""
        if re.fullmatch(r"-{3,}", underline.strip()) and line.strip():
            out += doc_markdown("\n".join(chunk), link)
            out.append(f"## {line.strip()}")
            chunk = []
        elif not re.fullmatch(r"-{3,}", line.strip()):
            chunk.append(line)
    out += doc_markdown("\n".join(chunk), link)
    return out


def declaration_block(entry: Entry) -> str:
    """The declaration as C, a long function's parameters one per line."""
    if entry.kind == "function" and len(entry.declaration) > 96:
        head, _, rest = entry.declaration.partition("(")
        parameters = [part.strip() for part in _top_level_split(rest.rsplit(")", 1)[0])]
        indent = " " * (len(head) + 1)
        text = head + "(" + (",\n" + indent).join(parameters) + ");"
        return reference_page.fenced(text.splitlines(), "c")
    if entry.kind in ("enum", "struct"):   # the members follow as a table
        return reference_page.fenced([f"{entry.declaration} {{ ... }} {entry.name};"], "c")
    return reference_page.fenced([entry.declaration], "c")


def _top_level_split(text: str) -> List[str]:
    parts, depth, current = [], 0, ""
    for character in text:
        depth += {"(": 1, ")": -1}.get(character, 0)
        if character == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += character
    return parts + [current]


def members_table(entry: Entry, link: reference_page.Linker) -> List[str]:
    if entry.kind == "enum":
        rows = ["| value | number | meaning |", "|---|---|---|"]
        for member in entry.members:
            rows.append(f'| <a id="{member.name}"></a>{reference_page.code(member.name)} '
                        f'| {reference_page.code(member.detail) if member.detail else ""} '
                        f'| {reference_page.prose(member.doc, link, C_NAME)} |')
    else:
        rows = ["| field | type | meaning |", "|---|---|---|"]
        for member in entry.members:
            rows.append(f"| {reference_page.code(member.name)} | {reference_page.name(member.detail, link)} "
                        f"| {reference_page.prose(member.doc, link, C_NAME)} |")
    return ["\n".join(rows)]


def render(header: Header, source: str, experimental: Optional[Header] = None,
           experimental_source: str = "") -> str:
    names = anchors(header, *([experimental] if experimental else []))
    link = linker_for(names)
    sources = f"`{source}`" + (f" and `{experimental_source}`" if experimental else "")
    out = ["# C API reference",
           f"Generated from {sources} by `docs/gen_c_reference.py`: every declaration of the "
           "header with its doc comment, in the header's order"
           + (", then the experimental tier's, under [Experimental](#experimental)" if experimental else "")
           + ". To change this page, change the header. The [C guide](../guides/c.md) shows the calls at work."]
    out += overview_markdown(header.overview, link)
    out += sections_markdown(header.sections, names, link)
    if experimental:
        out.append("## Experimental {#experimental}")
        out.append(f"What `{experimental_source}` declares (`#include <sheaf/experimental.h>`), "
                   "introduced by the header's opening comment:")
        out += overview_markdown(experimental.overview, link)
        out += sections_markdown(experimental.sections, names, link, prefix="Experimental: ")
    return "\n\n".join(out) + "\n"


def sections_markdown(sections: List[Section], names: Dict[str, str], link: reference_page.Linker,
                      prefix: str = "") -> List[str]:
    out: List[str] = []
    for section in sections:
        out.append(f"## {reference_page.escape(prefix + section.title)}")
        if section.intro:
            out += doc_markdown(section.intro, link)
        for entry in section.entries:
            out.append(f"### {reference_page.escape(entry.name)} {{#{names[entry.name]}}}")
            out.append(declaration_block(entry))
            out += doc_markdown(entry.doc, link)
            if entry.members:
                out += members_table(entry, link)
    return out


def main() -> int:
    arguments = reference_page.arguments(
        __doc__, "docs/reference/c.md",
        ("--header", "include/sheaf.h", "the header to document"),
        ("--experimental", "include/sheaf/experimental.h", "the experimental tier's header"))
    header = parse(arguments.header)
    experimental = parse(arguments.experimental) if arguments.experimental.exists() else None
    problems = header.problems + (experimental.problems if experimental else [])
    if experimental:
        twice = sorted(set(anchors(header)) & set(anchors(experimental)))
        problems += [f"{arguments.experimental}: {name} is documented in {arguments.header} too" for name in twice]

    def functions(of: Optional[Header]) -> int:
        return sum(entry.kind == "function" for section in (of.sections if of else []) for entry in section.entries)

    page = "" if problems else render(header, str(arguments.header), experimental, str(arguments.experimental))
    return reference_page.finish("gen_c_reference", arguments.output, page, problems,
                                f"{functions(header)} functions in {len(header.sections)} sections, "
                                f"{functions(experimental)} experimental")

if __name__ == "__main__":
    sys.exit(main())
