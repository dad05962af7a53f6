"""What the reference generators share: comment and docstring text as Markdown, and the way a
page is written (or, when the sources lack documentation, not written).

The header's comments and the docstrings are plain text with conventions of their own: backticks
around names, examples and tables laid out by indentation. Markdown would read some of their
characters as markup (``*out_json`` as emphasis, ``<value>`` as an HTML tag, a wrapped line that
starts with ``-`` as a list), so prose is escaped, the names a reference documents become links,
and indented lines become code blocks laid out as their authors wrote them.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent

#: Finds the URL of a name the site documents (None: not documented, shown as code).
Linker = Callable[[str], Optional[str]]

_PROSE_ESCAPES = str.maketrans({
    "\\": "\\\\", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[", "]": "\\]", "{": "\\{", "}": "\\}",
    "|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;",
})
# What would open a block at the start of a paragraph: a heading, a list item (a quote's ">" is
# escaped everywhere).
_HEADING_OR_BULLET = re.compile(r"^(#|[-+](?=\s))")
_NUMBERED = re.compile(r"^(\d+)([.)])(?=\s)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)


def escape(text: str) -> str:
    """`text` as Markdown that shows exactly these characters."""
    return text.translate(_PROSE_ESCAPES)


def code(text: str) -> str:
    """`text` as a code span: fenced with more backticks than it holds, padded where it needs."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def name(text: str, linker: Linker) -> str:
    """A name as code, linked to where the site documents it."""
    url = linker(text)
    return f"[{code(text)}]({url})" if url else code(text)


def prose(text: str, linker: Linker, word: Optional[re.Pattern] = None) -> str:
    """One paragraph of prose (its lines joined): backtick spans stay code, linked when the whole
    span is a documented name; in the rest, the words `word` matches are linked the same way and
    everything else is escaped."""
    text = " ".join(text.split())
    parts: List[str] = []
    position = 0
    for span in _CODE_SPAN.finditer(text):
        parts.append(_words(text[position:span.start()], linker, word))
        parts.append(name(span.group(2), linker))
        position = span.end()
    parts.append(_words(text[position:], linker, word))
    markdown = _HEADING_OR_BULLET.sub(r"\\\1", "".join(parts))
    return _NUMBERED.sub(r"\1\\\2", markdown)


def _words(text: str, linker: Linker, word: Optional[re.Pattern]) -> str:
    if word is None:
        return escape(text)
    parts: List[str] = []
    position = 0
    for match in word.finditer(text):
        parts.append(escape(text[position:match.start()]))
        parts.append(name(match.group(0), linker) if linker(match.group(0)) else escape(match.group(0)))
        position = match.end()
    parts.append(escape(text[position:]))
    return "".join(parts)


def fenced(lines: List[str], language: str = "") -> str:
    """A code block holding `lines` as they are."""
    fence = "```"
    while any(line.lstrip().startswith(fence) for line in lines):
        fence += "`"
    return "\n".join([fence + language, *lines, fence])


def blocks(text: str) -> Iterator[Tuple[str, List[str]]]:
    """Splits comment text into ("prose", lines) paragraphs and ("layout", lines) runs: lines
    indented deeper than the text around them (an example, a table of return values), which keep
    their layout. Blank lines end a paragraph; a layout run keeps the blank lines inside it."""
    lines = textwrap.dedent(text.expandtabs()).strip("\n").splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            index += 1
        elif line.startswith("  "):
            end = index
            while end < len(lines) and (lines[end].startswith("  ") or not lines[end].strip()):
                end += 1
            while not lines[end - 1].strip():
                end -= 1
            yield "layout", textwrap.dedent("\n".join(lines[index:end])).splitlines()
            index = end
        else:
            end = index
            while end < len(lines) and lines[end].strip() and not lines[end].startswith("  "):
                end += 1
            yield "prose", lines[index:end]
            index = end


# ---- the page ----------------------------------------------------------------------------------

def arguments(script_doc: str, output: str, *options: Tuple[str, str, str]) -> argparse.Namespace:
    """The command line of a generator: --output and `options` ((flag, default, help) each), paths
    relative to the repository root, which becomes the working directory (so messages name
    "include/sheaf.h:862", not a path of this machine)."""
    os.chdir(ROOT)
    parser = argparse.ArgumentParser(description=script_doc.split("\n\n")[0])
    for flag, default, help_text in options:
        parser.add_argument(flag, type=Path, default=Path(default), help=help_text)
    parser.add_argument("--output", type=Path, default=Path(output), help="the page to write")
    return parser.parse_args()


def finish(script: str, output: Path, page: str, problems: List[str], summary: str) -> int:
    """Writes `page` to `output` and says so; or, when there are `problems`, names each on stderr,
    writes nothing and returns 1, so that the docs build stops rather than publish a gap."""
    if problems:
        for problem in problems:
            print(f"{script}: {problem}", file=sys.stderr)
        print(f"{script}: {len(problems)} problem(s): no page written", file=sys.stderr)
        return 1
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(page, encoding="utf-8")
    print(f"{script}: {output}: {summary}")
    return 0
