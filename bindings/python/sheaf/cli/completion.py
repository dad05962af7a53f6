"""`sheaf completion bash|zsh`: a shell completion script for the `sheaf` command, made from its
argparse parser, so that it knows every subcommand and flag the parser knows.

Not part of the public API.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Dict, List, Mapping, NamedTuple, Sequence

from .exits import EXIT_OK
from .parser import build_parser

__all__ = ["bash", "zsh", "run"]

#: Extra values of flags the parser leaves open (the presets: the library checks them, and the
#: parser is built without loading it), by option string.
Values = Mapping[str, Sequence[str]]

#: Metavars that name a file (or inline JSON): the value is completed with the file names.
FILE_METAVAR = re.compile(r"FILE(\|DIR|\|JSON)?")


class Flag(NamedTuple):
    """What completion needs to know of one optional argument."""

    names: List[str]
    help: str
    takes_value: bool
    repeats: bool
    choices: List[str]
    is_file: bool


class Command(NamedTuple):
    """A subcommand: its flags, and its positional arguments (whose choices are completed)."""

    name: str
    help: str
    flags: List[Flag]
    positionals: List[argparse.Action]


def _flags(parser: argparse.ArgumentParser, values: Values) -> List[Flag]:
    flags = []
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._SubParsersAction):
            continue
        choices = list(action.choices or []) or [value for name in action.option_strings
                                                  for value in values.get(name, ())]
        metavar = action.metavar if isinstance(action.metavar, str) else ""
        flags.append(Flag(list(action.option_strings), action.help or "", action.nargs != 0,
                          isinstance(action, (argparse._AppendAction, argparse._CountAction)),
                          [str(choice) for choice in choices], bool(FILE_METAVAR.fullmatch(metavar))))
    return flags


def _commands(parser: argparse.ArgumentParser, values: Values) -> List[Command]:
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {action.dest: action.help or "" for action in subcommands._choices_actions}
    return [Command(name, helps.get(name, ""), _flags(sub, values),
                    [a for a in sub._actions if not a.option_strings])
            for name, sub in subcommands.choices.items()]


def _words(items: Sequence[str]) -> str:
    """Words for bash's `compgen -W`, which splits and expands its argument: only words that
    need no quoting are offered."""
    return " ".join(item for item in items if re.fullmatch(r"[\w.:/@%+=-]+", item))


# ---- bash ------------------------------------------------------------------------------------

def bash(parser: argparse.ArgumentParser, values: Values) -> str:
    prog = parser.prog
    commands = _commands(parser, values)
    top = [c.name for c in commands] + [n for flag in _flags(parser, values) for n in flag.names]
    cases = []
    for command in commands:
        flags_by_reply: Dict[str, List[str]] = {}
        for flag in command.flags:
            if not flag.takes_value:
                continue
            if flag.choices:
                reply = f'COMPREPLY=($(compgen -W "{_words(flag.choices)}" -- "$cur"))'
            elif flag.is_file:
                reply = 'compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur"))'
            else:
                reply = ":"   # a value of the user's own: nothing to offer
            flags_by_reply.setdefault(reply, []).extend(flag.names)
        value_cases = [f"                {'|'.join(names)}) {reply}; return ;;" for reply, names in flags_by_reply.items()]
        positional_choices = [str(c) for action in command.positionals for c in (action.choices or [])]
        words = _words([name for flag in command.flags for name in flag.names])
        lines = [f"        {command.name})"]
        if value_cases:
            lines += ['            case "$prev" in', *value_cases, "            esac"]
        if positional_choices:
            lines.append(f'            if [[ "$cur" != -* ]]; then COMPREPLY=($(compgen -W "{_words(positional_choices)}" -- "$cur")); return; fi')
        lines.append(f'            [[ "$cur" == -* ]] && COMPREPLY=($(compgen -W "{words}" -- "$cur"))')
        lines.append("            ;;")
        cases.append("\n".join(lines))
    function = f"_{re.sub(r'[^A-Za-z0-9_]', '_', prog)}"
    body = "\n".join(cases)
    return f"""# bash completion for {prog}, written by `{prog} completion bash`:
#   source <({prog} completion bash)
{function}() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    # --flag=value: bash splits the word at '=', and the flag is the word before it
    if [[ "$prev" == "=" && $COMP_CWORD -ge 2 ]]; then
        prev="${{COMP_WORDS[COMP_CWORD-2]}}"
    elif [[ "$cur" == "=" ]]; then
        prev="${{COMP_WORDS[COMP_CWORD-1]}}" cur=""
    fi
    # the subcommand: the first word that is not a flag (no top-level flag takes a value)
    local command="" word
    for word in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do
        case "$word" in
            -*) ;;
            *) command="$word"; break ;;
        esac
    done
    COMPREPLY=()
    case "$command" in
        "")
            COMPREPLY=($(compgen -W "{_words(top)}" -- "$cur"))
            ;;
{body}
    esac
}}
complete -F {function} {prog}
"""


# ---- zsh -------------------------------------------------------------------------------------

def _quoted(text: str) -> str:
    """`text` inside a single-quoted zsh word."""
    return text.replace("'", "'\\''")


def _described(help_text: str) -> str:
    """A help text as an _arguments description: one line, brackets escaped."""
    return re.sub(r"([\[\]\\])", r"\\\1", " ".join(help_text.split()))


def _zsh_value(choices: List[str], is_file: bool, message: str, url: bool = False) -> str:
    """The ":message:action" that completes a value."""
    if choices:
        action = "(" + " ".join(re.sub(r"([\s()\\:'])", r"\\\1", c) for c in choices) + ")"
    elif is_file:
        action = "_files"
    elif url:
        action = "_urls"
    else:
        action = " "
    return f":{message.replace(':', ' ')}:{action}"


def _zsh_flag(flag: Flag) -> str:
    names = flag.names
    if flag.repeats:
        prefix = "'*'"
    elif len(names) > 1:
        prefix = f"'({' '.join(names)})'"
    else:
        prefix = ""
    spelled = names[0] if len(names) == 1 else "{" + ",".join(names) + "}"
    message = names[-1].lstrip("-").replace("-", " ")
    value = _zsh_value(flag.choices, flag.is_file, message) if flag.takes_value else ""
    return f"{prefix}{spelled}'[{_quoted(_described(flag.help))}]{_quoted(value)}'"


def _zsh_positional(action: argparse.Action) -> str:
    message = action.metavar if isinstance(action.metavar, str) else action.dest
    value = _zsh_value([str(c) for c in action.choices or []], False, message, url=action.dest == "url")
    repeats = "*" if action.nargs in ("*", "+") else ""   # several URLs
    return f"'{repeats}{_quoted(value)}'"


def zsh(parser: argparse.ArgumentParser, values: Values) -> str:
    prog = parser.prog
    commands = _commands(parser, values)
    function = f"_{re.sub(r'[^A-Za-z0-9_]', '_', prog)}"
    described = "\n".join(f"                '{_quoted(c.name)}:{_quoted(_described(c.help).replace(':', ' '))}'"
                          for c in commands)
    top_flags = " \\\n        ".join(_zsh_flag(flag) for flag in _flags(parser, values))
    cases = []
    for command in commands:
        specs = [_zsh_flag(flag) for flag in command.flags] + [_zsh_positional(a) for a in command.positionals]
        arguments = " \\\n                    ".join(specs)
        cases.append(f"                {command.name})\n                    _arguments -s \\\n                    {arguments}\n                    ;;")
    body = "\n".join(cases)
    return f"""#compdef {prog}
# zsh completion for {prog}, written by `{prog} completion zsh`: either
#   source <({prog} completion zsh)        (after compinit), or save it as _{prog} in a folder of $fpath
{function}() {{
    local curcontext="$curcontext" state line
    typeset -A opt_args
    _arguments -C \\
        {top_flags} \\
        '1:command:->command' \\
        '*::argument:->argument'
    case $state in
        command)
            local -a commands
            commands=(
{described}
            )
            _describe -t commands '{prog} command' commands
            ;;
        argument)
            curcontext="${{curcontext%:*:*}}:{prog}-$words[1]:"
            case $words[1] in
{body}
            esac
            ;;
    esac
}}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    {function} "$@"
else
    compdef {function} {prog}
fi
"""


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        import sheaf as api
        values = {"--preset": sorted(api.presets())}
    except (ImportError, OSError, AttributeError):
        values = {}   # the script still completes everything else
    write = bash if args.shell == "bash" else zsh
    sys.stdout.write(write(build_parser(), values))
    return EXIT_OK
