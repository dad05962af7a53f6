#!/usr/bin/env python3
"""Writes the Python API reference page from the docstrings of the `sheaf` package: every name in
`sheaf.__all__`, and each public method and property of its classes, with signature and docstring.

`import sheaf` works without libsheaf.so (the library is loaded on first use), so the page is
made from the package as Python sees it, by `inspect`. Values and type aliases have no docstring
of their own: their `#:` comment (Sphinx's convention, which the package uses) serves. Google-style
sections (Args:, Returns:, Raises:, Attributes:) become lists, Sphinx roles (:class:`X`) links.

Exits 1, naming each one, when a name in `__all__` or a public method or property of its classes
has no docstring.

usage: docs/gen_python_reference.py [--package bindings/python] [--output docs/reference/python.md]
       (paths relative to the repository root)
"""

from __future__ import annotations

import ast
import enum
import importlib
import inspect
import re
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_c_reference  # noqa: E402 - beside this script: C names in docstrings link to its page
import reference_page  # noqa: E402

GROUPS = ("Classes", "Enumerations", "Exceptions", "Functions", "Types and values")
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Yields|Raises|Attributes|Examples?|Notes?):\s*$")
_LISTED = {"Args", "Arguments", "Parameters", "Raises", "Attributes"}
_ITEM = re.compile(r"^\**[\w.]+(?: \([^)]*\))?: ")
_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|attr|exc|data|obj):`~?([^`]+)`")
_WRAP = 96


class _Annotation:
    """An annotation kept as its source text (the package uses `from __future__ import annotations`)."""

    def __init__(self, text: Any) -> None:
        text = text if isinstance(text, str) else inspect.formatannotation(text)
        # A forward reference inside the annotation ('os.PathLike[str]') reads better bare.
        self.text = text if "Literal[" in text else text.replace("'", "").replace('"', "")

    def __repr__(self) -> str:
        return self.text


class Reference:
    """The page in the making: what it documents (`anchors`), and what lacks a docstring."""

    def __init__(self, package: Any, c_names: Dict[str, str]) -> None:
        self.package = package
        self.c_names = c_names
        self.problems: List[str] = []
        self.anchors: Dict[str, str] = {}   # "sheaf.Client.close" -> its anchor
        for public in package.__all__:
            self.anchors[f"sheaf.{public}"] = anchor(f"sheaf.{public}")
            obj = getattr(package, public)
            if inspect.isclass(obj):
                for member, _ in self.members(obj):
                    self.anchors[f"sheaf.{public}.{member}"] = anchor(f"sheaf.{public}.{member}")

    # ---- what is documented ----------------------------------------------------------------

    def members(self, cls: type) -> List[Tuple[str, Any]]:
        """The public methods and properties `cls` defines, or takes from a private base of the
        package; what a public base documents is documented there."""
        found: Dict[str, Any] = {}
        for base in reversed(cls.__mro__):
            documented_elsewhere = base is not cls and (
                not base.__module__.startswith("sheaf") or base.__name__ in self.package.__all__)
            if documented_elsewhere:
                continue
            for member, value in vars(base).items():
                if not member.startswith("_") and (
                        isinstance(value, (property, classmethod, staticmethod)) or inspect.isfunction(value)):
                    found[member] = value
        return list(found.items())

    def link(self, context: Optional[str] = None) -> reference_page.Linker:
        """Resolves a name written in a docstring: a public name, qualified or not (`Client`,
        `sheaf.Pager.more`), a C name, or with `context` (the public name whose docstring it is)
        one of its members. Only a Sphinx role says a bare `close()` is the context's own; in
        plain backticks it may be any object's, and a wrong link is worse than none."""
        def resolve(text: str) -> Optional[str]:
            bare = text[:-2] if text.endswith("()") else text
            for candidate in (bare, f"sheaf.{bare}", f"sheaf.{context}.{bare}" if context else None):
                if candidate in self.anchors:
                    return f"#{self.anchors[candidate]}"
            if bare in self.c_names:
                return f"c.md#{self.c_names[bare]}"
            return None
        return resolve

    # ---- text ------------------------------------------------------------------------------

    def docstring(self, text: str, context: Optional[str]) -> List[str]:
        """A docstring as Markdown: paragraphs, indented examples as code, Google sections as lists."""
        link = self.link()
        references: List[str] = []   # what each role names, resolved in `context`

        def role(match: re.Match) -> str:
            references.append(match.group(1))
            return f"\ue000{len(references) - 1}\ue001"

        text = _ROLE.sub(role, inspect.cleandoc(text))
        out = self._sections(text, link)

        def resolved(part: str) -> str:
            in_code = part.startswith("```")
            return re.sub("\ue000(\\d+)\ue001", lambda match: references[int(match.group(1))] if in_code
                          else reference_page.name(references[int(match.group(1))], self.link(context)), part)
        return [resolved(part) for part in out]

    def _sections(self, text: str, link: reference_page.Linker) -> List[str]:
        out: List[str] = []
        body: List[str] = []
        lines = text.splitlines()
        index = 0
        while index < len(lines):
            section = _SECTION.match(lines[index])
            if section is None:
                body.append(lines[index])
                index += 1
                continue
            out += self._paragraphs("\n".join(body), link)
            body = []
            end = index + 1
            while end < len(lines) and (not lines[end].strip() or lines[end].startswith(" ")):
                end += 1
            content = textwrap.dedent("\n".join(lines[index + 1:end])).strip("\n")
            title = section.group(1)
            out.append(f"**{title}**")
            if title in _LISTED:
                out.append(self._items(content, link))
            else:
                out += self._paragraphs(content, link)
            index = end
        out += self._paragraphs("\n".join(body), link)
        return out

    def _paragraphs(self, text: str, link: reference_page.Linker) -> List[str]:
        out = []
        for kind, lines in reference_page.blocks(text):
            if kind == "prose":
                out.append(reference_page.prose("\n".join(lines), link, gen_c_reference.C_NAME))
            elif all(_ITEM.match(line) for line in lines if line and not line.startswith(" ")):
                out.append(self._items("\n".join(lines), link))   # "name: what it is", indented
            else:
                out.append(reference_page.fenced(lines, "python"))
        return out

    def _items(self, text: str, link: reference_page.Linker) -> str:
        """`name: description` items (continued on deeper lines) as a Markdown list."""
        items: List[Tuple[str, List[str]]] = []
        for line in text.splitlines():
            if line and not line.startswith(" ") and ":" in line:
                term, _, rest = line.partition(":")
                items.append((term.strip(), [rest.strip()]))
            elif items:
                items[-1][1].append(line.strip())
        return "\n".join(f"- {', '.join(reference_page.name(name, link) for name in term.split(', '))}: "
                         f"{reference_page.prose(' '.join(description), link, gen_c_reference.C_NAME)}"
                         for term, description in items)

    # ---- declarations ----------------------------------------------------------------------

    def signature(self, prefix: str, shown: str, function: Any, drop_first: bool) -> str:
        """`prefix shown(parameters) -> returns` as a code block, one parameter a line when long."""
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):
            return reference_page.fenced([f"{prefix}{shown}(...)"], "python")
        parameters = list(signature.parameters.values())[1 if drop_first else 0:]
        parameters = [parameter.replace(annotation=_Annotation(parameter.annotation))
                      if parameter.annotation is not parameter.empty else parameter for parameter in parameters]
        returns = signature.return_annotation
        if returns is signature.empty or prefix == "class ":   # a class's __init__ returns None
            returns = signature.empty
        signature = signature.replace(parameters=parameters,
                                      return_annotation=returns if returns is signature.empty else _Annotation(returns))
        text = f"{prefix}{shown}{signature}"
        if len(text) <= _WRAP:
            return reference_page.fenced([text], "python")
        parts = _parameter_texts(signature)
        returns_text = f" -> {signature.return_annotation!r}" if signature.return_annotation is not signature.empty else ""
        lines = [f"{prefix}{shown}("] + [f"    {part}," for part in parts] + [f"){returns_text}"]
        return reference_page.fenced(lines, "python")

    def entry(self, public: str, obj: Any, sources: Dict[str, Tuple[str, Dict[str, str]]]) -> List[str]:
        out = [f"### sheaf.{reference_page.escape(public)} {{#{self.anchors[f'sheaf.{public}']}}}"]
        if inspect.isclass(obj):
            doc = _class_docstring(obj)
            if not doc:
                self.problems.append(f"sheaf.{public} ({obj.__module__}): the class has no docstring")
            # Enums are not called; an exception that takes its base's arguments would only repeat them.
            inherits_arguments = issubclass(obj, BaseException) and "__init__" not in vars(obj) \
                and obj.__bases__[0] is not Exception
            if not issubclass(obj, enum.Enum) and not inherits_arguments:
                out.append(self.signature("class ", public, obj, drop_first=False))
            bases = [base for base in obj.__bases__ if base is not object
                     and not (base.__module__.startswith("sheaf") and base.__name__ not in self.package.__all__)]
            if bases:
                out.append("Bases: " + ", ".join(reference_page.name(_qualified(base), self.link(None))
                                                  for base in bases))
            out += self.docstring(doc or "", public)
            init = obj.__dict__.get("__init__")
            if init is not None and init.__doc__:
                out += self.docstring(init.__doc__, public)
            if issubclass(obj, enum.Enum):
                out.append(self.enum_table(obj))
            for member, value in self.members(obj):
                out += self.member(public, member, value)
        elif inspect.isfunction(obj) or inspect.isbuiltin(obj):
            if not obj.__doc__:
                self.problems.append(f"sheaf.{public} ({obj.__module__}): the function has no docstring")
            keyword = "async def " if inspect.iscoroutinefunction(obj) else "def "
            out.append(self.signature(keyword, public, obj, drop_first=False))
            out += self.docstring(obj.__doc__ or "", None)
        else:
            module, comments = sources.get(public, ("sheaf", {}))
            declaration, comment = comments.get(public, (f"{public} = ...", ""))
            if not comment:
                self.problems.append(f"sheaf.{public} ({module}): the value has no #: comment above it")
            out.append(reference_page.fenced([declaration], "python"))
            out += self.docstring(comment, None)
        return out

    def member(self, public: str, member: str, value: Any) -> List[str]:
        function = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
        if not function.__doc__:
            self.problems.append(f"sheaf.{public}.{member} ({function.__module__}): no docstring")
        out = [f"#### {reference_page.escape(public)}.{reference_page.escape(member)} "
               f"{{#{self.anchors[f'sheaf.{public}.{member}']}}}"]
        if isinstance(value, property):
            returns = inspect.signature(function).return_annotation
            shown = f": {_Annotation(returns)!r}" if returns is not inspect.Signature.empty else ""
            out.append(reference_page.fenced([f"property {member}{shown}"], "python"))
        else:
            prefix = "async def " if inspect.iscoroutinefunction(function) else "def "
            prefix = ("@classmethod\n" if isinstance(value, classmethod) else
                      "@staticmethod\n" if isinstance(value, staticmethod) else "") + prefix
            out.append(self.signature(prefix, member, function, drop_first=not isinstance(value, staticmethod)))
        out += self.docstring(function.__doc__ or "", public)
        return out

    def enum_table(self, cls: type) -> str:
        comments = _assignment_comments(textwrap.dedent(inspect.getsource(cls)), in_class=True)
        rows = ["| member | value | meaning |", "|---|---|---|"]
        for member in cls:
            comment = comments.get(member.name, ("", ""))[1]
            rows.append(f"| {reference_page.code(member.name)} | {int(member)} "
                        f"| {reference_page.prose(comment, self.link(cls.__name__), gen_c_reference.C_NAME)} |")
        return "\n".join(rows)


def anchor(dotted: str) -> str:
    """The id of a documented name: the name itself ("sheaf.Client.fetch_all"), but for the
    underscores around a component ("sheaf.version" for __version__), which Markdown would read
    as emphasis inside a heading's {#id}."""
    return ".".join(part.strip("_") for part in dotted.split("."))


def _parameter_texts(signature: inspect.Signature) -> List[str]:
    """Each parameter as `str(signature)` shows it, with the "/" and "*" markers."""
    parts: List[str] = []
    parameters = list(signature.parameters.values())
    for index, parameter in enumerate(parameters):
        if parameter.kind is parameter.KEYWORD_ONLY and \
                all(before.kind not in (before.VAR_POSITIONAL, before.KEYWORD_ONLY) for before in parameters[:index]):
            parts.append("*")
        parts.append(str(parameter))
        if parameter.kind is parameter.POSITIONAL_ONLY and \
                (index + 1 == len(parameters) or parameters[index + 1].kind is not parameter.POSITIONAL_ONLY):
            parts.append("/")
    return parts


def _qualified(cls: type) -> str:
    return f"sheaf.{cls.__name__}" if cls.__module__.startswith("sheaf") else cls.__name__


def _class_docstring(cls: type) -> Optional[str]:
    """The docstring written in the class (not one a dataclass or NamedTuple makes up)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return cls.__dict__.get("__doc__")
    return ast.get_docstring(tree.body[0], clean=False)


def _assignment_comments(source: str, in_class: bool = False) -> Dict[str, Tuple[str, str]]:
    """name -> (its declaration, its `#:` comment) for the assignments of a module or a class body:
    the `#:` lines right above an assignment, or a `#:` comment at the end of its line."""
    tree = ast.parse(source)
    body = tree.body[0].body if in_class else tree.body
    lines = source.splitlines()
    found: Dict[str, Tuple[str, str]] = {}
    for node in body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            declaration = ast.get_source_segment(source, node) or name
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
            declaration = f"{name}: {ast.get_source_segment(source, node.annotation)}"
        else:
            continue
        trailing = lines[node.end_lineno - 1].partition("#:")[2].strip()
        above: List[str] = []
        line = node.lineno - 2
        while line >= 0 and lines[line].strip().startswith("#:"):
            above.insert(0, lines[line].strip()[2:].strip())
            line -= 1
        found[name] = (" ".join(declaration.split()), trailing or "\n".join(above))
    return found


def value_sources(package: Any) -> Dict[str, Tuple[str, Dict[str, Tuple[str, str]]]]:
    """For each name `sheaf/__init__.py` imports or assigns: the module that assigns it, and that
    module's `#:` comments."""
    init = Path(package.__file__)
    tree = ast.parse(init.read_text(encoding="utf-8"))
    modules: Dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:
                modules[alias.asname or alias.name] = f"sheaf.{node.module}" if node.module else "sheaf"
    comments: Dict[str, Dict[str, Tuple[str, str]]] = {}
    found: Dict[str, Tuple[str, Dict[str, Tuple[str, str]]]] = {}
    for public in package.__all__:
        module = modules.get(public, "sheaf")
        if module not in comments:
            comments[module] = _assignment_comments(Path(importlib.import_module(module).__file__)
                                                    .read_text(encoding="utf-8"))
        found[public] = (module, comments[module])
    return found


def group(obj: Any) -> str:
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return "Exceptions"
    if inspect.isclass(obj) and issubclass(obj, enum.Enum):
        return "Enumerations"
    if inspect.isclass(obj):
        return "Classes"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return "Functions"
    return "Types and values"


def render(reference: Reference) -> str:
    package = reference.package
    out = ["# Python API reference",
           "Generated from the docstrings of the `sheaf` package (`bindings/python/sheaf`) by "
           "`docs/gen_python_reference.py`: every name in `sheaf.__all__`, and the public methods and "
           "properties of its classes. To change this page, change the docstrings. The "
           "[Python guide](../guides/python.md) shows them at work."]
    out += reference.docstring(package.__doc__ or "", None)
    sources = value_sources(package)
    grouped: Dict[str, List[str]] = {title: [] for title in GROUPS}
    for public in package.__all__:
        obj = getattr(package, public)
        grouped[group(obj)] += reference.entry(public, obj, sources)
    for title in GROUPS:
        if grouped[title]:
            out.append(f"## {title}")
            out += grouped[title]
    return "\n\n".join(out) + "\n"


def main() -> int:
    arguments = reference_page.arguments(
        __doc__, "docs/reference/python.md",
        ("--package", "bindings/python", "the folder that holds the sheaf package"),
        ("--header", "include/sheaf.h", "the C header whose names docstrings link to"))
    sys.path.insert(0, str(arguments.package.resolve()))
    package = importlib.import_module("sheaf")
    if Path(package.__file__).resolve().parent.parent != arguments.package.resolve():
        sys.exit(f"gen_python_reference: imported sheaf from {package.__file__}, not from {arguments.package}")
    reference = Reference(package, gen_c_reference.anchors(gen_c_reference.parse(arguments.header)))
    page = render(reference)
    return reference_page.finish("gen_python_reference", arguments.output, page, reference.problems,
                                f"{len(package.__all__)} names of sheaf.__all__, "
                                f"{len(reference.anchors) - len(package.__all__)} methods and properties")

if __name__ == "__main__":
    sys.exit(main())
