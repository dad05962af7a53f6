#!/usr/bin/env python3
"""The type graph of Sources/: which Swift file uses a name another file declares, read from the
text alone (no compiler, no build), and whether the stage folders are layers.

A lexical pass over every .swift file under Sources/: comments and string literals are dropped
(the code inside a string's interpolation is kept), then the declarations are collected with the
scope they stand in (top level, a type's or an extension's body, or code), and then each file's
identifiers are resolved against the declarations of the other files its module can see (its
own module's, and the public or package ones of the modules it imports). A use makes an edge
from its file to the declaring file when it names:

  * a type (class, struct, enum, protocol, actor, typealias): `Page`, `TransportError.Kind`, a
    nested type by its bare name inside a scope of its outer type;
  * a free function (`startDetachedThread(...)`; a call, or a value, never an argument label);
  * a member of a type: by a qualifier that names the type (`Paging.parse(...)`,
    `Self.limit`), by its bare name inside an extension of the type in another file, or after a
    dot on any expression (`run.planFacts()`, `.pageBudget`) when the name is distinctive: one
    type declares it across all of Sources, it is not a name the standard library or Foundation
    uses everywhere (`count`, `url`, `start`, ...: STOP_NAMES), and it is not one plain word of
    five letters or fewer. A method is told apart by its first argument label as well
    (`first(named:)` is not `first`);
  * an initializer that an extension in another file adds (`IdentityKey(scanner, range)` reaches
    the `init(_:_:)` of `extension IdentityKey` in PageReader.swift, matched by first label).

Private and fileprivate declarations never reach another file, and a name the using file binds
itself (a local, a parameter, a generic parameter, a private type) is not looked up elsewhere. So
the edges err on the side of missing one rather than inventing one.

Each file belongs to a folder: a stage folder of Sources/Sheaf (Read, Plan, ...) or another
target (SheafCABI, SheafCurl, and the C modules CCurl and CSheafHeader, reached by `import`).
LAYERS orders the folders from the bottom up; `check` reports every reference from a file to a
name declared in a higher layer, and the cycles among folders.

    python3 scripts/type_graph.py                # summary: SCC sizes, upward references
    python3 scripts/type_graph.py --files        # file graph: its cycles, each edge with its names
    python3 scripts/type_graph.py --folders      # folder graph: its edges, SCCs, upward references
    python3 scripts/type_graph.py --json         # everything above, as JSON
    python3 scripts/type_graph.py --dot out.dot  # folder graph (with --files: the file graph);
                                                 # out.png/.svg: rendered by graphviz's dot
    python3 scripts/type_graph.py --rev HEAD     # any of the above for Sources/ at a revision
    python3 scripts/type_graph.py --uses Sheaf/Plan/PagePlanner.swift   # one file's uses, with lines
    python3 scripts/type_graph.py --check bindings/python/tests/layers_allowed.txt   # the test's check
    python3 scripts/type_graph.py --draft bindings/python/tests/layers_allowed.txt   # the list, redone
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Set, Tuple

REPO = Path(__file__).resolve().parents[1]
SOURCES = REPO / "Sources"

# The declared layering, lowest first: a file may use what its own layer and the layers below it
# declare, never what a layer above declares. It lives here, beside the checker that reads it,
# rather than in a file under Sources/: Sources/ is the Swift code's (inside a target's folder,
# SwiftPM wants a file it does not build excluded, as Package.swift does SheafCABI's exports.map),
# and the order is a property of the check, read by its test. It is the order the code follows today: leaving aside the uses of
# SheafError (declared in Client/, thrown by every stage), no other order of the stage folders has
# fewer uses against it (every order tried). Where it departs from the order a page travels
# (docs/layout.md): Transport and Read sit low, as every stage reads HTTP values and JSON; Run sits
# below Deliver, whose pagers and async snapshots drive a run. The uses that go against it today are
# listed, each with its reason, in bindings/python/tests/layers_allowed.txt.
LAYERS: Tuple[str, ...] = (
    "Support",      # locks, deadlines, threads, errno: nothing of Sheaf's own
    "Transport",    # the transport protocol, HTTP request and response values
    "Read",         # JSON scanning, pages, link headers, Arrow columns
    "Cache",        # the response cache on disk, its hash
    "Policy",       # configuration, credentials, origins, redaction
    "Hooks",        # log records and events
    "Describe",     # list descriptions, presets, resume tokens, partitions
    "Plan",         # page planning, windows, pacing
    "Fetch",        # one URL's attempts, retries and redirects
    "Assemble",     # the ordered prefix
    "Run",          # one list's run, a group of runs
    "Deliver",      # pagers, async snapshots and item decoding over a run
    "Request",      # single requests, downloads
    "Client",       # SheafClient and its error
    "CCurl",        # libcurl's header (C)
    "SheafCurl",    # the libcurl transport
    "CSheafHeader", # include/sheaf.h as a module (C)
    "SheafCABI",    # the C ABI over all of it
)

# Member names the standard library, Foundation or Dispatch use on their own types: after a dot on
# an expression whose type is not known here they name nothing certain, whoever else declares
# them. (A qualifier that names a type, `Paging.parse`, still resolves them.)
STOP_NAMES = frozenset("""
    absoluteString addingPercentEncoding allCases allSatisfy append appending async asyncAfter
    base body bytes cancel cancelled capacity code compactMap complete components contains count
    current data debugDescription decode default description distance dropFirst dropLast
    element elements empty encode end endIndex enumerated error failed failure filter finish
    finished first firstIndex flatMap forEach hash hashValue headers host id index indices init
    insert isEmpty items joined key keys kind last lastIndex length lock lowercased lowerBound
    main makeAsyncIterator makeIterator map max message min name next none now offset path pointee
    port prefix query rawValue
    read reduce remove removeAll removeFirst removeLast replace reserveCapacity reset result
    resume reversed run scheme send set shared signal sorted split start status stop string
    startIndex success suffix sync text timeout type unlock unknown update uppercased upperBound url utf8
    value values wait withLock write zero
""".split())

KEYWORDS = frozenset("""
    actor any as associatedtype async await break case catch class continue convenience default
    defer deinit didSet do dynamic else enum extension fallthrough false fileprivate final for func
    get guard if import in indirect infix init inout internal is lazy let mutating nil nonisolated
    nonmutating open operator optional override package postfix precedencegroup prefix private
    protocol public repeat required rethrows return self Self set some static struct subscript
    super switch throw throws true try typealias unowned var weak where while willSet consuming
    borrowing sending isolated each macro _
""".split())

TYPE_KEYWORDS = ("class", "struct", "enum", "protocol", "actor", "extension")
VISIBILITY_PUBLIC = ("public", "open", "package")
VISIBILITY_PRIVATE = ("private", "fileprivate")
C_MODULES = ("CCurl", "CSheafHeader")


# ----------------------------------------------------------------------------------------------
# Lexing


class Tok(NamedTuple):
    kind: str     # "id", "op", "num", "str", "punct", "directive", "attr"
    text: str
    line: int


_OPERATOR_CHARS = set("/=-+!*%<>&|^~?.")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")
_PUNCT = set("(){}[],:;@#\\`")


class _Lexer:
    """Swift's tokens as far as names go: identifiers (backticked ones unquoted), operators,
    numbers, and one "str" token per string literal, with the code of each interpolation lexed in
    its place. Comments (nested block comments too) are dropped."""

    def __init__(self, text: str):
        self.s = text
        self.i = 0
        self.line = 1
        self.out: List[Tok] = []

    def emit(self, kind: str, text: str) -> None:
        self.out.append(Tok(kind, text, self.line))

    def run(self) -> List[Tok]:
        self.code(stop_at_paren=False)
        return self.out

    def code(self, stop_at_paren: bool) -> None:
        s, n = self.s, len(self.s)
        depth = 0
        while self.i < n:
            c = s[self.i]
            if c in " \t\r\f\n":
                m = _SPACE.match(s, self.i)
                self.line += s.count("\n", self.i, m.end())
                self.i = m.end()
            elif s.startswith("//", self.i):
                end = s.find("\n", self.i)
                self.i = n if end < 0 else end
            elif s.startswith("/*", self.i):
                self.block_comment()
            elif c == '"' or (c == "#" and self.raw_string_ahead()):
                self.string()
            elif c.isalpha() or c == "_":
                j = _WORD.match(s, self.i).end()
                self.emit("id", s[self.i:j])
                self.i = j
            elif c == "`":
                j = s.find("`", self.i + 1)
                j = n if j < 0 else j
                self.emit("id", s[self.i + 1:j])
                self.i = j + 1
            elif c.isdigit():
                j = self.i
                while j < n and (s[j].isalnum() or s[j] == "_" or
                                 (s[j] == "." and j + 1 < n and s[j + 1].isdigit())):
                    j += 1
                self.emit("num", s[self.i:j])
                self.i = j
            elif c == "#":
                j = self.i + 1
                while j < n and (s[j].isalnum() or s[j] == "_"):
                    j += 1
                self.emit("directive", s[self.i:j])
                self.i = j
            elif c == "$":   # $0, $1: closure arguments
                j = self.i + 1
                while j < n and (s[j].isalnum() or s[j] == "_"):
                    j += 1
                self.emit("num", s[self.i:j])
                self.i = j
            elif c == "." and not (self.i + 1 < n and s[self.i + 1] in _OPERATOR_CHARS):
                self.emit("punct", ".")
                self.i += 1
            elif c in "?!" and self.i + 1 < n and s[self.i + 1] in ".([":   # a?.b, a!.b, a?(..), a![0]
                self.emit("op", c)
                self.i += 1
            elif c in _OPERATOR_CHARS:
                j = self.i
                while j < n and s[j] in _OPERATOR_CHARS and not s.startswith("//", j) and not s.startswith("/*", j):
                    j += 1
                self.emit("op", s[self.i:j])
                self.i = j
            elif c in "([{":
                depth += c == "("
                self.emit("punct", c)
                self.i += 1
            elif c in ")]}":
                if c == ")":
                    if stop_at_paren and depth == 0:
                        self.i += 1
                        return
                    depth -= 1
                self.emit("punct", c)
                self.i += 1
            else:   # , : ; @ \ and anything else
                self.emit("punct", c)
                self.i += 1

    def block_comment(self) -> None:
        s, n = self.s, len(self.s)
        level = 0
        while self.i < n:
            if s.startswith("/*", self.i):
                level += 1
                self.i += 2
            elif s.startswith("*/", self.i):
                level -= 1
                self.i += 2
                if level == 0:
                    return
            else:
                if s[self.i] == "\n":
                    self.line += 1
                self.i += 1

    def raw_string_ahead(self) -> bool:
        j = self.i
        while j < len(self.s) and self.s[j] == "#":
            j += 1
        return j < len(self.s) and self.s[j] == '"'

    def string(self) -> None:
        s, n = self.s, len(self.s)
        hashes = 0
        while s[self.i] == "#":
            hashes += 1
            self.i += 1
        multi = s.startswith('"""', self.i)
        self.i += 3 if multi else 1
        close = ('"""' if multi else '"') + "#" * hashes
        escape = "\\" + "#" * hashes
        self.emit("str", "")
        while self.i < n:
            if s.startswith(escape, self.i):
                j = self.i + len(escape)
                if j < n and s[j] == "(":
                    self.i = j + 1
                    self.code(stop_at_paren=True)   # the interpolation is code
                    continue
                self.i = j + 1
                continue
            if s.startswith(close, self.i):
                self.i += len(close)
                return
            if s[self.i] == "\n":
                self.line += 1
                if not multi:   # an unterminated literal: end it at the line
                    self.i += 1
                    return
            self.i += 1


def lex(text: str) -> List[Tok]:
    return _Lexer(text).run()


# ----------------------------------------------------------------------------------------------
# Declarations and uses


@dataclass
class Decl:
    name: str                 # the simple name ("Kind", "parse", "init")
    kind: str                 # type | func | case | var | init
    owner: Tuple[str, ...]    # the type path it is a member of; () at the top level
    file: str
    module: str
    line: int
    private: bool             # private or fileprivate (or inside such a type or extension)
    public: bool              # public, open or package: other modules see it
    in_extension: bool = False
    label: Optional[str] = None   # a function's or init's first argument label ("_" unlabeled; "" none)

    @property
    def path(self) -> Tuple[str, ...]:
        return self.owner + (self.name,)


@dataclass
class Scope:
    kind: str                       # "type" or "code"
    path: Tuple[str, ...] = ()      # the type a type body or extension is of
    private: bool = False
    public: bool = False            # an extension marked public/package: its members are
    is_extension: bool = False
    parens: int = 0


@dataclass
class Use:
    """One identifier as it stands in the code, with what the resolution needs to know."""
    name: str
    line: int
    after_dot: bool
    qualifier: Optional[Tuple[str, ...]]  # the dotted names before it (`A.B.name`: ("A", "B")), if identifiers
    call_label: Optional[str]              # followed by `(`: its first argument's label ("_" unlabeled, "" none)
    is_label: bool                         # followed by `:` inside parentheses: an argument label
    scopes: Tuple[Tuple[str, ...], ...]    # the type paths of the enclosing type bodies, innermost first


@dataclass
class SwiftFile:
    rel: str                 # path relative to Sources/
    module: str
    folder: str
    imports: Set[str] = field(default_factory=set)
    decls: List[Decl] = field(default_factory=list)
    uses: List[Use] = field(default_factory=list)
    # bound here: locals, parameters (what a type-like name binds, a generic parameter, is in private_types)
    local_names: Set[str] = field(default_factory=set)
    tuple_labels: Set[str] = field(default_factory=set)  # labels of tuples (`(index: Int, page: Page)`)
    private_types: Set[str] = field(default_factory=set)  # private, local and generic-parameter type names


def module_and_folder(rel: str) -> Tuple[str, str]:
    parts = Path(rel).parts
    module = parts[0]
    if module == "Sheaf" and len(parts) > 2:
        return module, parts[1]
    return module, module


def _modifiers_before(toks: Sequence[Tok], i: int) -> List[str]:
    """The words of the declaration that starts before token i: back to the start of its line or
    to the last brace or semicolon, attributes and their arguments included."""
    words = []
    line = toks[i].line
    j = i - 1
    while j >= 0 and toks[j].line == line and toks[j].text not in ("{", "}", ";"):
        if toks[j].kind == "id":
            words.append(toks[j].text)
            if toks[j].text in VISIBILITY_PRIVATE and j + 1 < i and toks[j + 1].text == "(":
                words[-1] = toks[j].text + "(set)"
        j -= 1
    return words


def _matching(toks: Sequence[Tok], i: int, opening: str, closing: str) -> int:
    """The index of the token that closes the bracket opening at i."""
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j].text
        if toks[j].kind == "op" and opening == "<":
            depth += t.count("<") if set(t) <= {"<"} else 0
            depth -= t.count(">") if set(t) <= {">"} else 0
        elif toks[j].kind == "punct":
            depth += t == opening
            depth -= t == closing
        if depth == 0:
            return j
    return len(toks) - 1


def _generic_params(toks: Sequence[Tok], i: int) -> Tuple[List[str], int]:
    """At `<` (index i) after a declared name: its generic parameters' names, and the index after `>`."""
    if i >= len(toks) or toks[i].text != "<":
        return [], i
    end = _matching(toks, i, "<", ">")
    names, expect = [], True
    depth = 0
    for t in toks[i + 1:end]:
        if t.text in ("(", "[", "<"):
            depth += 1
        elif t.text in (")", "]", ">"):
            depth -= 1
        if depth == 0 and t.text == ",":
            expect = True
        elif expect and t.kind == "id" and t.text != "each":
            names.append(t.text)
            expect = False
    return names, end + 1


def _first_label(toks: Sequence[Tok], i: int) -> str:
    """At `(` (index i): the first parameter's or argument's label: "_" unlabeled, "" no argument."""
    if i + 1 >= len(toks):
        return ""
    a = toks[i + 1]
    if a.text == ")":
        return ""
    if a.kind == "id" and i + 2 < len(toks) and toks[i + 2].text == ":":
        return a.text
    if a.kind == "id" and i + 3 < len(toks) and toks[i + 2].kind == "id" and toks[i + 3].text == ":":
        return a.text   # `label name: Type` in a declaration; `_ name: Type` gives "_"
    return "_"


def _param_names(toks: Sequence[Tok], i: int) -> Tuple[List[str], int]:
    """At `(` of a declaration's parameter list: the names its body binds, and the index after `)`."""
    end = _matching(toks, i, "(", ")")
    names = []
    depth = 0
    start = True
    for j in range(i + 1, end):
        t = toks[j]
        if t.text in ("(", "[", "{"):
            depth += 1
        elif t.text in (")", "]", "}"):
            depth -= 1
        elif depth == 0 and t.text == ",":
            start = True
        elif depth == 0 and t.text == ":" and start:
            prev = toks[j - 1]
            if prev.kind == "id":
                names.append(prev.text)
            start = False
    return names, end + 1


def parse_file(path: Path, rel: str) -> SwiftFile:
    module, folder = module_and_folder(rel)
    f = SwiftFile(rel=rel, module=module, folder=folder)
    toks = lex(path.read_text(encoding="utf-8"))
    n = len(toks)
    scopes: List[Scope] = []
    pending: Optional[Scope] = None     # the body the next `{` opens: a type's or an extension's
    skip: Set[int] = set()              # tokens that are not uses (declared names, attributes, imports)

    def in_code() -> bool:
        return any(s.kind == "code" for s in scopes)

    def enclosing_private() -> bool:
        return any(s.private for s in scopes if s.kind == "type")

    def member_owner() -> Optional[Tuple[str, ...]]:
        """The type whose body the current token stands in directly (at the body's own level)."""
        if scopes and scopes[-1].kind == "type" and scopes[-1].parens == 0:
            return scopes[-1].path
        return None

    def add_decl(name: str, kind: str, i: int, words: List[str], label: Optional[str] = None) -> None:
        owner = member_owner()
        local = in_code() or (scopes and owner is None)
        if local:
            if kind == "type":
                f.private_types.add(name)
            else:
                f.local_names.add(name)
            return
        top = scopes[-1] if scopes else None
        private = any(w in VISIBILITY_PRIVATE for w in words) or enclosing_private()
        public = any(w in VISIBILITY_PUBLIC for w in words) or bool(top and top.public and not private)
        if private and kind == "type" and not owner:
            f.private_types.add(name)
        f.decls.append(Decl(name=name, kind=kind, owner=owner or (), file=rel, module=module,
                            line=toks[i].line, private=private, public=public,
                            in_extension=bool(top and top.is_extension), label=label))

    i = 0
    while i < n:
        t = toks[i]
        text = t.text
        if t.kind == "directive":
            if text in ("#if", "#elseif"):   # the condition names platforms and modules, not code
                line = t.line
                while i + 1 < n and toks[i + 1].line == line:
                    i += 1
                    skip.add(i)
            i += 1
            continue
        if t.kind == "punct":
            if text == "@" and i + 1 < n and toks[i + 1].kind == "id":
                skip.add(i + 1)
                if i + 2 < n and toks[i + 2].text == "(" and toks[i + 1].text not in ("Sendable", "escaping"):
                    for j in range(i + 2, _matching(toks, i + 2, "(", ")") + 1):
                        skip.add(j)
            elif text == "{":
                if pending is not None and (not scopes or scopes[-1].parens == 0):
                    scopes.append(pending)
                    pending = None
                else:
                    scopes.append(Scope("code"))
                    _closure_params(toks, i, f.local_names)
            elif text == "}":
                if scopes:
                    scopes.pop()
            elif text in ("(", "["):
                if scopes:
                    scopes[-1].parens += 1
            elif text in (")", "]"):
                if scopes:
                    scopes[-1].parens -= 1
            i += 1
            continue
        if t.kind != "id":
            i += 1
            continue

        if text == "import" and (i == 0 or toks[i - 1].line != t.line or toks[i - 1].text in ("@_implementationOnly", "public")):
            j = i + 1
            while j < n and toks[j].line == t.line:
                skip.add(j)
                if toks[j].kind == "id" and toks[j].text not in ("struct", "class", "enum", "func", "protocol"):
                    f.imports.add(toks[j].text)
                j += 1
            i = j
            continue

        if text in TYPE_KEYWORDS and i + 1 < n and toks[i + 1].kind == "id" and toks[i + 1].text not in (
                "func", "var", "let", "subscript", "init", "override", "final", "public", "private") and \
                not (i > 0 and toks[i - 1].text == "."):
            if text == "class" and (i > 0 and toks[i - 1].text == ":"):   # `protocol P: class`
                i += 1
                continue
            words = _modifiers_before(toks, i)
            j = i + 1
            if text == "extension":
                path = [toks[j].text]
                while j + 2 < n and toks[j + 1].text == "." and toks[j + 2].kind == "id":
                    j += 2
                    path.append(toks[j].text)
                private = any(w in VISIBILITY_PRIVATE for w in words)
                pending = Scope("type", tuple(path), private=private,
                                public=any(w in VISIBILITY_PUBLIC for w in words), is_extension=True)
                i = j + 1
                continue
            name = toks[j].text
            skip.add(j)
            add_decl(name, "type", j, words)
            params, after = _generic_params(toks, j + 1)
            f.local_names.update(params)
            f.private_types.update(params)
            owner = member_owner() or ()
            private = any(w in VISIBILITY_PRIVATE for w in words) or enclosing_private() or in_code()
            pending = Scope("type", owner + (name,), private=private)
            i = after
            continue

        if text in ("typealias", "associatedtype") and i + 1 < n and toks[i + 1].kind == "id":
            words = _modifiers_before(toks, i)
            skip.add(i + 1)
            if text == "typealias":
                add_decl(toks[i + 1].text, "type", i + 1, words)
            else:
                f.private_types.add(toks[i + 1].text)   # a protocol's: named bare inside it only
            params, _ = _generic_params(toks, i + 2)
            f.local_names.update(params)
            i += 2
            continue

        if text == "func" and i + 1 < n:
            words = _modifiers_before(toks, i)
            name_tok = toks[i + 1]
            j = i + 2
            if name_tok.kind == "id":
                skip.add(i + 1)
            params, j = _generic_params(toks, j)
            f.local_names.update(params)
            f.private_types.update(params)
            if j < n and toks[j].text == "(":
                label = _first_label(toks, j)
                names, _ = _param_names(toks, j)
                f.local_names.update(names)
            else:
                label = ""
            if name_tok.kind == "id":
                add_decl(name_tok.text, "func", i + 1, words, label)
            i += 2
            continue

        if text in ("init", "subscript") and i + 1 < n and (toks[i + 1].text in ("(", "<") or toks[i + 1].text in ("?", "!")) \
                and not (i > 0 and toks[i - 1].text == "."):
            words = _modifiers_before(toks, i)
            j = i + 1
            if toks[j].text in ("?", "!"):
                j += 1
            params, j = _generic_params(toks, j)
            f.local_names.update(params)
            if j < n and toks[j].text == "(":
                label = _first_label(toks, j)
                names, _ = _param_names(toks, j)
                f.local_names.update(names)
                if text == "init":
                    add_decl("init", "init", i, words, label)
            i += 1
            continue

        if text in ("let", "var"):
            words = _modifiers_before(toks, i)
            j = i + 1
            if j < n and toks[j].kind == "id" and member_owner() is not None:
                skip.add(j)
                add_decl(toks[j].text, "var", j, words)
            else:   # a local binding or a pattern: every name it binds, up to `=`, `:` or a brace
                while j < n and toks[j].line == t.line and toks[j].text not in ("=", ":", "{", "in"):
                    if toks[j].kind == "id" and toks[j - 1].text != ".":
                        f.local_names.add(toks[j].text)
                        skip.add(j)
                    j += 1
            i += 1
            continue

        if text == "case" and member_owner() is not None:   # an enum's cases
            words = _modifiers_before(toks, i)
            j = i + 1
            depth = 0
            expect = True
            while j < n and toks[j].line == t.line and not (depth == 0 and toks[j].text in ("{", "}")):
                tj = toks[j]
                if tj.text in ("(", "["):
                    depth += 1
                elif tj.text in (")", "]"):
                    depth -= 1
                elif depth == 0 and tj.text == ",":
                    expect = True
                elif depth == 0 and tj.text == "=":
                    expect = False
                elif expect and depth == 0 and tj.kind == "id" and tj.text != "indirect":
                    skip.add(j)
                    add_decl(tj.text, "case", j, words)
                    expect = False
                j += 1
            i += 1
            continue

        if text == "for" and not (i > 0 and toks[i - 1].text in ("(", ",", ".")):   # not a label: `for x in`
            j = i + 1
            while j < n and toks[j].text != "in" and toks[j].line == t.line:
                if toks[j].kind == "id" and toks[j].text not in KEYWORDS and toks[j - 1].text != ".":
                    f.local_names.add(toks[j].text)
                j += 1
            i += 1
            continue

        i += 1

    # Second walk: the uses, with their enclosing type scopes (rebuilt the same way).
    f.uses = list(_uses(toks, skip, f))
    return f


def _closure_params(toks: Sequence[Tok], i: int, names: Set[str]) -> None:
    """At a `{` opening code: the names of a closure's parameters (`{ a, b in`, `{ (a: T) in`,
    `{ [weak self] value in`)."""
    found = []
    depth = 0
    for j in range(i + 1, min(i + 40, len(toks))):
        t = toks[j]
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        elif t.text == "in" and depth == 0:
            names.update(found)
            return
        elif t.text in ("{", "}", "=", "let", "var", "return", "if", "guard", "switch", "case", ".") or \
                t.kind in ("str", "num"):
            return
        elif t.kind == "id" and depth <= 1:
            found.append(t.text)


def _uses(toks: Sequence[Tok], skip: Set[int], f: SwiftFile) -> Iterable[Use]:
    n = len(toks)
    stack: List[Tuple[str, Tuple[str, ...], int]] = []   # (kind, type path, parens)
    pending: Optional[Tuple[str, ...]] = None
    # "(" or "[" to tell labels (inside parentheses) from type annotations; "t(" for the
    # parentheses of a tuple (not after a name, `)`, `]`, `>`, `?` or `!`: not a call or a list of parameters)
    paren_stack: List[str] = []
    i = 0
    while i < n:
        t = toks[i]
        if t.kind == "punct":
            if t.text == "{":
                if pending is not None and (not stack or stack[-1][2] == 0):
                    stack.append(("type", pending, 0))
                    pending = None
                else:
                    stack.append(("code", (), 0))
            elif t.text == "}" and stack:
                stack.pop()
            elif t.text in ("(", "["):
                before = toks[i - 1] if i else None
                tuple_paren = t.text == "(" and (before is None or not (
                    (before.kind == "id" and before.text not in ("return", "in", "case", "throw", "try", "await", "else"))
                    or before.text in (")", "]", ">", "?", "!") or before.kind == "str"))
                paren_stack.append("t(" if tuple_paren else t.text)
                if stack:
                    k, p, d = stack[-1]
                    stack[-1] = (k, p, d + 1)
            elif t.text in (")", "]"):
                if paren_stack:
                    paren_stack.pop()
                if stack:
                    k, p, d = stack[-1]
                    stack[-1] = (k, p, d - 1)
            i += 1
            continue
        if t.kind != "id":
            i += 1
            continue
        text = t.text
        if text in TYPE_KEYWORDS and i + 1 < n and toks[i + 1].kind == "id" and toks[i + 1].text not in (
                "func", "var", "let", "subscript", "init", "override", "final", "public", "private") and \
                not (i > 0 and toks[i - 1].text in (":", ".")):
            j = i + 1
            if text == "extension":
                path = [toks[j].text]
                while j + 2 < n and toks[j + 1].text == "." and toks[j + 2].kind == "id":
                    j += 2
                    path.append(toks[j].text)
                pending = tuple(path)
            else:
                owner = stack[-1][1] if stack and stack[-1][0] == "type" and stack[-1][2] == 0 else ()
                pending = owner + (toks[j].text,)
        if i in skip or text in KEYWORDS and text not in ("self", "Self", "init"):
            i += 1
            continue
        after_dot = i > 0 and toks[i - 1].text == "."
        qualifier: Optional[Tuple[str, ...]] = None
        if after_dot:
            names = []
            j = i - 1
            while j >= 1 and toks[j].text == "." and toks[j - 1].kind == "id":
                names.append(toks[j - 1].text)
                j -= 2
            qualifier = tuple(reversed(names)) if names else None
            # a chain that starts after `.` (`f().a.b`, `.a.b`) is an expression, not a type path
            if qualifier is not None and j >= 0 and toks[j].text == ".":
                qualifier = None
        nxt = toks[i + 1] if i + 1 < n else None
        call_label = _first_label(toks, i + 1) if nxt is not None and nxt.text == "(" and nxt.line == t.line else None
        is_label = (nxt is not None and nxt.text == ":" and bool(paren_stack) and paren_stack[-1] in ("(", "t(")
                    and not after_dot and toks[i - 1].text in ("(", ","))
        if is_label and paren_stack[-1] == "t(":
            f.tuple_labels.add(text)
        scopes = tuple(p for k, p, _ in reversed(stack) if k == "type")
        yield Use(name=text, line=t.line, after_dot=after_dot, qualifier=qualifier,
                  call_label=call_label, is_label=is_label, scopes=scopes)
        i += 1


# ----------------------------------------------------------------------------------------------
# Resolution


def _distinctive(name: str) -> bool:
    """A member name that means one thing wherever it is written after a dot: several words
    (camelCase), or one word of six letters or more, and not a name of the standard library's."""
    if name in STOP_NAMES or name in KEYWORDS or len(name) < 4:
        return False
    words = re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", name)
    return len(words) > 1 or len(name) >= 6


class Ref(NamedTuple):
    name: str        # as reported: "Page", "TransportError.Kind", "Paging.parameter", "writeAll"
    target: str      # the declaring file
    line: int        # the first use's line in the using file
    how: str         # type | func | init | member (after a type: `Paging.parse`) | scope (bare, in
                     # an extension of its type) | dot (after a dot on an expression: distinctive)


@dataclass
class Tree:
    root: Path
    files: Dict[str, SwiftFile]
    refs: Dict[str, List[Ref]]            # file -> its references to other files (first use each)
    c_modules: Dict[str, Set[str]]        # file -> the C modules of Sources/ it imports

    def file_graph(self) -> Dict[str, Dict[str, List[str]]]:
        graph: Dict[str, Dict[str, List[str]]] = {rel: {} for rel in self.files}
        for rel, refs in self.refs.items():
            for r in refs:
                names = graph[rel].setdefault(r.target, [])
                if r.name not in names:
                    names.append(r.name)
        for names in (v for g in graph.values() for v in g.values()):
            names.sort()
        return graph

    def folder_of(self, rel: str) -> str:
        if rel in self.files:
            return self.files[rel].folder
        return rel   # a C module

    def folder_graph(self) -> Dict[str, Dict[str, List[Tuple[str, str, str]]]]:
        """folder -> folder -> the references that make the edge: (file, name, declaring file)."""
        folders = sorted({f.folder for f in self.files.values()} | {m for ms in self.c_modules.values() for m in ms})
        graph: Dict[str, Dict[str, List[Tuple[str, str, str]]]] = {d: {} for d in folders}
        for rel, refs in self.refs.items():
            src = self.files[rel].folder
            for r in refs:
                dst = self.files[r.target].folder
                if dst != src:
                    graph[src].setdefault(dst, []).append((rel, r.name, r.target))
        for rel, modules in self.c_modules.items():
            for m in sorted(modules):
                graph[self.files[rel].folder].setdefault(m, []).append((rel, m, m))
        return graph


def _visible_modules(f: SwiftFile, modules: Set[str]) -> List[str]:
    return [f.module] + sorted(m for m in f.imports if m in modules and m != f.module)


def resolve(files: Dict[str, SwiftFile]) -> Dict[str, List[Ref]]:
    modules = {f.module for f in files.values()}
    all_decls = [d for f in files.values() for d in f.decls]
    # Types by module: top-level by name, nested by path.
    types: Dict[Tuple[str, Tuple[str, ...]], List[Decl]] = {}
    for d in all_decls:
        if d.kind == "type":
            types.setdefault((d.module, d.path), []).append(d)
    funcs: Dict[Tuple[str, str], List[Decl]] = {}
    for d in all_decls:
        if d.kind in ("func", "var") and not d.owner:
            funcs.setdefault((d.module, d.name), []).append(d)
    members: Dict[Tuple[str, ...], List[Decl]] = {}      # owner path -> members (all modules)
    by_name: Dict[str, List[Decl]] = {}                   # member name -> every member so named
    for d in all_decls:
        if d.owner:
            members.setdefault(d.owner, []).append(d)
            by_name.setdefault(d.name, []).append(d)

    def sees(f: SwiftFile, d: Decl) -> bool:
        if d.private:
            return d.file == f.rel
        return d.module == f.module or (d.public and d.module in f.imports)

    def type_decls(f: SwiftFile, path: Tuple[str, ...]) -> List[Decl]:
        for m in _visible_modules(f, modules):
            found = [d for d in types.get((m, path), []) if sees(f, d)]
            here = [d for d in found if d.file == f.rel]   # a private type of the file shadows
            if found:
                return here or found
        return []

    def resolve_type_path(f: SwiftFile, names: Tuple[str, ...], scopes) -> Optional[Tuple[str, ...]]:
        """A dotted name as a type path: its first name a type in scope (nested in an enclosing
        type) or at the top level, each next one nested in it."""
        first = names[0]
        if first in ("Self", "self"):
            base = scopes[0] if scopes else None
            if base is None:
                return None
            path = base
        else:
            path = None
            for scope in scopes:
                for k in range(len(scope), 0, -1):
                    if type_decls(f, scope[:k] + (first,)):
                        path = scope[:k] + (first,)
                        break
                if path:
                    break
            if path is None:
                if first in f.private_types and not any(d.path == (first,) for d in f.decls):
                    return None
                if not type_decls(f, (first,)):
                    return None
                path = (first,)
        for name in names[1:]:
            if not type_decls(f, path + (name,)):
                return None
            path = path + (name,)
        return path

    def member_decls(f: SwiftFile, owner: Tuple[str, ...], name: str, label: Optional[str]) -> List[Decl]:
        found = [d for d in members.get(owner, []) if d.name == name and sees(f, d)]
        if label is not None:
            labelled = [d for d in found if d.kind != "func" or d.label == label]
            found = labelled
        return found

    tuple_labels = {name for f in files.values() for name in f.tuple_labels}

    refs: Dict[str, List[Ref]] = {}
    for rel, f in files.items():
        out: Dict[Tuple[str, str], Ref] = {}

        def add(name: str, decl: Decl, line: int, how: str) -> None:
            if decl.file != rel:
                out.setdefault((name, decl.file), Ref(name, decl.file, line, how))

        for u in f.uses:
            name = u.name
            if u.is_label:
                continue
            if u.after_dot:
                owner = resolve_type_path(f, u.qualifier, u.scopes) if u.qualifier else None
                if owner is not None:
                    nested = type_decls(f, owner + (name,))
                    if nested:
                        for d in nested:
                            add(".".join(owner + (name,)), d, u.line, "type")
                        continue
                    if name == "init":
                        found = [d for d in member_decls(f, owner, "init", u.call_label) if d.in_extension]
                        if len({d.file for d in found}) == 1:
                            add(".".join(owner) + ".init", found[0], u.line, "init")
                        continue
                    found = member_decls(f, owner, name, u.call_label)
                    if len({d.file for d in found}) == 1:
                        add(".".join(owner + (name,)), found[0], u.line, "member")
                    continue
                if u.qualifier and (u.qualifier[0] in ("self", "Self") or u.qualifier[0][0].isupper()):
                    continue   # a member of a type not declared here (Int.max), or of self's type
                if not _distinctive(name) or name == "init" or name in tuple_labels:
                    continue
                candidates = [d for d in by_name.get(name, [])
                              if d.kind != "func" or u.call_label is None or d.label == u.call_label]
                everyone = by_name.get(name, [])
                if not candidates or len({d.owner for d in everyone}) != 1 or len({d.file for d in candidates}) != 1:
                    continue
                d = candidates[0]
                if sees(f, d) and d.kind != "type":
                    add(".".join(d.owner + (name,)), d, u.line, "dot")
                continue

            # a bare name
            if name[0].isupper() or name in ("Self",):
                if name == "Self":
                    continue
                path = resolve_type_path(f, (name,), u.scopes)
                if path is None:
                    continue
                decls = type_decls(f, path)
                for d in decls:
                    add(".".join(path), d, u.line, "type")
                if u.call_label is not None:   # an initializer an extension in another file adds
                    inits = member_decls(f, path, "init", u.call_label)
                    ext = [d for d in inits if d.in_extension]
                    if ext and len({d.file for d in inits}) == 1:
                        add(".".join(path) + ".init", ext[0], u.line, "init")
                continue
            if name in f.local_names:
                continue
            # a member of an enclosing type, declared in another file (an extension's, or the
            # type's own body when this is an extension of it)
            hit = False
            for scope in u.scopes:
                found = member_decls(f, scope, name, u.call_label)
                found = [d for d in found if d.kind != "type"]
                if found:
                    if len({d.file for d in found}) == 1:
                        add(".".join(scope + (name,)), found[0], u.line, "scope")
                    hit = True
                    break
            if hit:
                continue
            for m in _visible_modules(f, modules):
                found = [d for d in funcs.get((m, name), []) if sees(f, d)]
                if found:
                    for d in found:
                        add(name, d, u.line, "func")
                    break
        refs[rel] = sorted(out.values(), key=lambda r: (r.target, r.name))
    return refs


def load(root: Path = SOURCES) -> Tree:
    files: Dict[str, SwiftFile] = {}
    for path in sorted(root.rglob("*.swift")):
        rel = path.relative_to(root).as_posix()
        files[rel] = parse_file(path, rel)
    c_present = {m for m in C_MODULES if (root / m).is_dir()}
    c_modules = {rel: {m for m in f.imports if m in c_present} for rel, f in files.items()}
    return Tree(root=root, files=files, refs=resolve(files), c_modules=c_modules)


# ----------------------------------------------------------------------------------------------
# Graphs


def sccs(graph: Dict[str, Iterable[str]]) -> List[List[str]]:
    """Strongly connected components (Tarjan's, iterative), each sorted, largest first."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    on_stack: Set[str] = set()
    stack: List[str] = []
    found: List[List[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                found.append(sorted(group))
    return sorted(found, key=lambda g: (-len(g), g))


def cycles(graph: Dict[str, Iterable[str]]) -> List[List[str]]:
    """The SCCs of more than one node: the cycles."""
    return [g for g in sccs(graph) if len(g) > 1]


# ----------------------------------------------------------------------------------------------
# Layers


class Upward(NamedTuple):
    """A file's use of what a higher layer declares, one entry per file, declaration and layer:
    `name` is the top-level declaration (a type, a free function, a C module), `names` every name
    of it the file uses (`SheafError`, `SheafError.Code.decoding`, ...)."""
    file: str                  # the using file, relative to Sources/
    name: str
    from_layer: str
    to_layer: str
    names: Tuple[str, ...]
    targets: Tuple[str, ...]   # the files (or C module) declaring them
    line: int                  # the first use's line

    @property
    def key(self) -> Tuple[str, str, str]:
        return (self.file, self.name, self.to_layer)


def root_name(name: str) -> str:
    return name.split(".")[0]


def upward_references(tree: Tree, layers: Sequence[str] = LAYERS) -> List[Upward]:
    """Every use, by a file, of a name a higher layer declares."""
    rank = {layer: k for k, layer in enumerate(layers)}
    grouped: Dict[Tuple[str, str, str], List[Tuple[str, str, int]]] = {}
    for rel, refs in tree.refs.items():
        src = tree.files[rel].folder
        for r in refs:
            dst = tree.files[r.target].folder
            if src in rank and dst in rank and rank[dst] > rank[src]:
                grouped.setdefault((rel, root_name(r.name), dst), []).append((r.name, r.target, r.line))
        for m in tree.c_modules.get(rel, ()):
            if src in rank and m in rank and rank[m] > rank[src]:
                grouped.setdefault((rel, m, m), []).append((m, m, 0))
    found = []
    for (rel, name, dst), uses in grouped.items():
        found.append(Upward(rel, name, tree.files[rel].folder, dst,
                            tuple(sorted({n for n, _, _ in uses})), tuple(sorted({t for _, t, _ in uses})),
                            min(line for _, _, line in uses)))
    return sorted(found, key=lambda u: (u.file, u.name, u.to_layer))


def unlayered_folders(tree: Tree, layers: Sequence[str] = LAYERS) -> List[str]:
    return sorted(set(tree.folder_graph()) - set(layers))


def folder_cycles(tree: Tree, without: Iterable[Tuple[str, str, str]] = ()) -> List[List[str]]:
    """The cycles among folders, with the uses `without` ((file, name, to-layer) keys) left out."""
    skip = set(without)
    graph: Dict[str, Set[str]] = {}
    for src, edges in tree.folder_graph().items():
        graph[src] = {dst for dst, refs in edges.items()
                      if any((rel, root_name(name), dst) not in skip for rel, name, _ in refs)}
    return cycles(graph)


class Allowed(NamedTuple):
    file: str
    name: str
    from_layer: str
    to_layer: str
    reason: str
    line: int

    @property
    def key(self) -> Tuple[str, str, str]:
        return (self.file, self.name, self.to_layer)


_ALLOWED_LINE = re.compile(r"^(?P<file>\S+)\s+(?P<name>\S+)\s+(?P<src>\S+)\s*->\s*(?P<dst>\S+)\s+--\s+(?P<reason>.*\S)\s*$")


def read_allowed(path: Path) -> List[Allowed]:
    """The allow-list: one use a line, `file  name  from -> to  -- reason` (`#`: a comment line)."""
    found = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _ALLOWED_LINE.match(line)
        if not m or m["reason"].startswith("TODO"):
            raise ValueError(f"{path}:{number}: want `file name from -> to  -- reason`, got {raw!r}")
        found.append(Allowed(m["file"], m["name"], m["src"], m["dst"], m["reason"], number))
    return found


class Check(NamedTuple):
    new: List[Upward]             # upward uses the allow-list does not name
    stale: List[Allowed]          # allow-listed uses that are gone (or whose layers changed)
    cycles: List[List[str]]       # folder cycles once the allowed uses are left out
    unlayered: List[str]          # folders LAYERS does not place

    @property
    def ok(self) -> bool:
        return not (self.new or self.stale or self.cycles or self.unlayered)


def check(tree: Tree, allowed: Sequence[Allowed] = (), layers: Sequence[str] = LAYERS) -> Check:
    up = upward_references(tree, layers)
    keys = {a.key: a for a in allowed}
    present = {u.key: u for u in up}
    stale = [a for a in allowed if a.key not in present or present[a.key].from_layer != a.from_layer]
    return Check(new=[u for u in up if u.key not in keys],
                 stale=stale,
                 cycles=folder_cycles(tree, without=set(keys) & set(present)),
                 unlayered=unlayered_folders(tree, layers))


def describe_upward(u: Upward) -> str:
    where = f":{u.line}" if u.line else ""
    names = ", ".join(n for n in u.names if n != u.name)
    return (f"{u.file}{where} uses {u.name}{f' ({names})' if names else ''}, declared in "
            f"{', '.join(u.targets)}: {u.from_layer} -> {u.to_layer}")


def report(result: Check, allowed_path: str = "the allow-list") -> str:
    lines = []
    if result.new:
        lines.append(f"uses of a higher layer that {allowed_path} does not list (move the declaration down, "
                     "or the using code up):")
        lines += [f"  {describe_upward(u)}" for u in result.new]
    if result.stale:
        lines.append(f"listed in {allowed_path} but no longer there (delete the line: the list only shrinks):")
        lines += [f"  line {a.line}: {a.file} {a.name} {a.from_layer} -> {a.to_layer}" for a in result.stale]
    for group in result.cycles:
        lines.append(f"folders in a cycle: {' '.join(group)}")
    if result.unlayered:
        lines.append(f"folders LAYERS (scripts/type_graph.py) does not place: {', '.join(result.unlayered)}")
    return "\n".join(lines)


def draft_allowed(tree: Tree, existing: Sequence[Allowed] = ()) -> str:
    """Today's upward uses as allow-list lines, keeping the reasons of the lines already written."""
    reasons = {a.key: a.reason for a in existing}
    up = upward_references(tree)
    width = max((len(u.file) for u in up), default=0)
    nwidth = max((len(u.name) for u in up), default=0)
    awidth = max((len(f"{u.from_layer} -> {u.to_layer}") for u in up), default=0)
    out = []
    for u in up:
        arrow = f"{u.from_layer} -> {u.to_layer}"
        out.append(f"{u.file:<{width}}  {u.name:<{nwidth}}  {arrow:<{awidth}} -- {reasons.get(u.key, 'TODO: why')}")
    return "\n".join(out) + ("\n" if out else "")


# ----------------------------------------------------------------------------------------------
# Output


def _dot(tree: Tree, files: bool) -> str:
    lines = ["digraph sheaf {", "  rankdir=BT;", "  node [shape=box, fontname=Helvetica, fontsize=10];"]
    rank = {layer: k for k, layer in enumerate(LAYERS)}
    if files:
        graph = tree.file_graph()
        in_cycle = {n for g in cycles(graph) for n in g}
        by_folder: Dict[str, List[str]] = {}
        for rel in graph:
            by_folder.setdefault(tree.files[rel].folder, []).append(rel)
        for k, (folder, rels) in enumerate(sorted(by_folder.items(), key=lambda kv: rank.get(kv[0], -1))):
            lines.append(f'  subgraph "cluster_{k}" {{ label="{folder}";')
            for rel in rels:
                style = ', style=filled, fillcolor="#f4c7c3"' if rel in in_cycle else ""
                lines.append(f'    "{rel}" [label="{Path(rel).stem}"{style}];')
            lines.append("  }")
        for src, dsts in sorted(graph.items()):
            for dst, names in sorted(dsts.items()):
                a, b = tree.files[src].folder, tree.files[dst].folder
                up = a in rank and b in rank and rank[b] > rank[a]
                color = ', color="#c0392b"' if up else ""
                lines.append(f'  "{src}" -> "{dst}" [tooltip="{", ".join(names)}"{color}];')
    else:
        graph = tree.folder_graph()
        for folder in sorted(graph, key=lambda d: rank.get(d, -1)):
            lines.append(f'  "{folder}";')
        # LAYERS from the top down (a use points up; a red one, against the layers, down)
        placed = [layer for layer in LAYERS if layer in graph]
        for lower, higher in zip(placed, placed[1:]):
            lines.append(f'  "{higher}" -> "{lower}" [style=invis];')
        for src, dsts in sorted(graph.items()):
            for dst, refs in sorted(dsts.items()):
                up = src in rank and dst in rank and rank[dst] > rank[src]
                style = ', color="#c0392b", fontcolor="#c0392b", style=bold, constraint=false' if up else ""
                lines.append(f'  "{src}" -> "{dst}" [label="{len(refs)}"{style}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_dot(tree: Tree, target: Path, files: bool) -> str:
    text = _dot(tree, files)
    if target.suffix in (".png", ".svg", ".pdf"):
        dot = shutil.which("dot")
        if dot is None:
            fallback = target.with_suffix(".dot")
            fallback.write_text(text)
            return f"graphviz's dot is not installed: wrote {fallback} instead"
        subprocess.run([dot, f"-T{target.suffix[1:]}", "-o", str(target)], input=text.encode(), check=True)
        return f"wrote {target}"
    target.write_text(text)
    return f"wrote {target}"


def as_json(tree: Tree) -> dict:
    fg = tree.file_graph()
    dg = tree.folder_graph()
    return {
        "files": {rel: {dst: names for dst, names in edges.items()} for rel, edges in fg.items()},
        "file_sccs": sccs(fg),
        "file_cycles": [{"files": g, "edges": [{"from": a, "to": b, "names": fg[a][b]}
                                               for a in g for b in sorted(fg[a]) if b in g]}
                        for g in cycles(fg)],
        "folders": {src: {dst: [{"file": r, "name": n, "declared_in": t} for r, n, t in refs]
                          for dst, refs in edges.items()} for src, edges in dg.items()},
        "folder_sccs": sccs(dg),
        "layers": list(LAYERS),
        "upward": [u._asdict() for u in upward_references(tree)],
    }


def print_files(tree: Tree) -> None:
    fg = tree.file_graph()
    found = cycles(fg)
    edges = sum(len(v) for v in fg.values())
    print(f"{len(fg)} files, {edges} file-to-file edges; SCCs of more than one file (cycles): "
          + (", ".join(str(len(g)) for g in found) or "none"))
    for k, group in enumerate(found, 1):
        print(f"\ncycle {k}: {len(group)} files, each edge inside it with the names that make it")
        for a in group:
            print(f"  {a}")
            for b in sorted(fg[a]):
                if b in group:
                    print(f"      -> {b}: {', '.join(fg[a][b])}")


def print_folders(tree: Tree) -> None:
    dg = tree.folder_graph()
    rank = {layer: k for k, layer in enumerate(LAYERS)}
    print("folder -> folder: uses (a name, once per using file); * against LAYERS")
    for src in sorted(dg, key=lambda d: rank.get(d, -1)):
        for dst in sorted(dg[src], key=lambda d: rank.get(d, -1)):
            refs = dg[src][dst]
            up = src in rank and dst in rank and rank[dst] > rank[src]
            names = sorted({root_name(n) for _, n, _ in refs})
            shown = ", ".join(names[:5]) + (f", ... ({len(names)} declarations)" if len(names) > 5 else "")
            print(f"  {'*' if up else ' '} {src:>12} -> {dst:<12} {len(refs):3}  {shown}")
    groups = sccs(dg)
    print("\nfolder SCCs (sizes): " + " ".join(str(len(g)) for g in groups))
    for g in groups:
        if len(g) > 1:
            print(f"  a cycle of {len(g)} folders: {' '.join(sorted(g, key=lambda d: rank.get(d, -1)))}")
    up = upward_references(tree)
    print(f"\nLAYERS, lowest first: {' < '.join(LAYERS)}")
    print(f"uses of a higher layer: {len(up)} (file, declaration) pairs in {len({u.file for u in up})} files")
    for u in up:
        print(f"  {describe_upward(u)}")
    missing = unlayered_folders(tree)
    if missing:
        print(f"folders LAYERS does not place: {', '.join(missing)}")


def print_summary(tree: Tree) -> None:
    fg = tree.file_graph()
    dg = tree.folder_graph()
    fc = cycles(fg)
    dc = cycles(dg)
    up = upward_references(tree)
    print(f"{len(fg)} Swift files, {sum(len(v) for v in fg.values())} file edges; file cycles: "
          + (", ".join(f"{len(g)} files" for g in fc) or "none"))
    print(f"{len(dg)} folders, {sum(len(v) for v in dg.values())} folder edges; folder cycles: "
          + (", ".join(f"{len(g)} folders" for g in dc) or "none"))
    print(f"uses of a higher layer: {len(up)} (file, declaration) pairs in {len({u.file for u in up})} files"
          " (--folders lists them)")


def _tree_at(rev: str, tmp: Path) -> Path:
    """Sources/ as it is at a git revision, extracted under tmp."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev, "Sources"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
    return tmp / "Sources"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--files", action="store_true", help="the file graph's cycles, each edge with its names")
    parser.add_argument("--folders", action="store_true", help="the folder graph, its SCCs and the uses of a higher layer")
    parser.add_argument("--json", action="store_true", help="everything, as JSON")
    parser.add_argument("--dot", metavar="FILE", help="write the folder graph (the file graph with --files) as DOT; "
                        ".png/.svg/.pdf: rendered with graphviz's dot when installed")
    parser.add_argument("--uses", metavar="FILE", help="every use FILE (relative to Sources/) makes of another file, with its line")
    parser.add_argument("--check", metavar="ALLOWED", help="check LAYERS against an allow-list (exit 1 on a failure)")
    parser.add_argument("--draft", metavar="ALLOWED", nargs="?", const="",
                        help="print today's uses of a higher layer as allow-list lines (reasons kept from ALLOWED)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--root", default=str(SOURCES), help="the Sources/ folder to read (default: this repository's)")
    source.add_argument("--rev", help="read Sources/ as it is at this git revision (HEAD: before the work tree's edits)")
    args = parser.parse_args(argv)
    if hasattr(signal, "SIGPIPE"):   # `| head` ends the output quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if args.rev:
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            tree = load(_tree_at(args.rev, Path(tmp)))
    else:
        tree = load(Path(args.root))
    if args.uses:
        for r in tree.refs[args.uses]:
            print(f"  {args.uses}:{r.line} {r.how:6} {r.name:44} -> {r.target}")
        return 0
    if args.check:
        result = check(tree, read_allowed(Path(args.check)))
        print(report(result, args.check) or f"layers hold, but for the {len(read_allowed(Path(args.check)))} uses {args.check} lists")
        return 0 if result.ok else 1
    if args.draft is not None:
        sys.stdout.write(draft_allowed(tree, read_allowed(Path(args.draft)) if args.draft else ()))
        return 0
    if args.json:
        json.dump(as_json(tree), sys.stdout, indent=1)
        print()
    if args.files and not args.json:
        print_files(tree)
    if args.folders and not args.json:
        if args.files:
            print()
        print_folders(tree)
    if args.dot:
        print(write_dot(tree, Path(args.dot), files=args.files), file=sys.stderr)
    if not (args.files or args.folders or args.json or args.dot):
        print_summary(tree)
    return 0


if __name__ == "__main__":
    sys.exit(main())
