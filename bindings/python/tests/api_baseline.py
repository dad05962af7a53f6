"""The public Python API of `sheaf`, recorded, and the rules that a later version must keep.

    python3 bindings/python/tests/api_baseline.py            # compare the live API with the baseline
    python3 bindings/python/tests/api_baseline.py --update   # record the live API as the baseline

The baseline (api_baseline.json, beside this file) holds, for `sheaf` and each public module
directly under it (no leading underscore; `__main__` is the command, not an API): every public
name (`__all__` when the module has one), and for each

- function: its parameters as `inspect.signature` shows them, without annotations and defaults
  (`name=` says there is a default), and whether it is a coroutine or generator function;
- class: its direct bases, its constructor's parameters, its public members and the protocol methods
  it defines (`__enter__`, `__iter__`, ...), dataclass and NamedTuple fields, enum members;
- other value: that it exists, and its value when it is an int (exit codes, signal numbers).

Compatible means everything recorded is still there: no name, member, field or enum member
removed; an enum member or int constant keeps its value; a class still derives from each base it
had (a new class in between is fine); a function's positional parameters keep their order, names
and kinds, a keyword-only one stays accepted by name, a parameter with a default keeps one, and
anything new has a default. Additions pass. Not seen: attributes an instance sets in `__init__`, annotations,
and what a function does.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import importlib
import inspect
import json
import pkgutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Mapping, Optional, Tuple

BASELINE = Path(__file__).with_name("api_baseline.json")
PACKAGE = "sheaf"

#: Protocol methods a user relies on without naming them (with, for, async for, len, in, ==).
PROTOCOL_METHODS = frozenset({
    "__enter__", "__exit__", "__aenter__", "__aexit__", "__iter__", "__next__", "__aiter__", "__anext__",
    "__len__", "__getitem__", "__contains__", "__bool__", "__eq__", "__hash__", "__call__", "__await__",
})

Entry = Dict[str, Any]


# ---- recording ------------------------------------------------------------------------------------

def public_modules(package: str = PACKAGE) -> Dict[str, ModuleType]:
    """The package and the public modules directly under it, by name."""
    root = importlib.import_module(package)
    modules = {package: root}
    for info in pkgutil.iter_modules(root.__path__):
        if not info.name.startswith("_"):
            name = f"{package}.{info.name}"
            modules[name] = importlib.import_module(name)
    return modules


def public_names(module: ModuleType) -> List[str]:
    """`__all__`, or the names without a leading underscore that the module itself defines."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return sorted(names)
    return sorted(
        name for name, value in vars(module).items()
        if not name.startswith("_") and not inspect.ismodule(value)
        and getattr(value, "__module__", module.__name__) == module.__name__)


def parameters(function: Any) -> Optional[List[str]]:
    """The parameters as tokens (`name`, `name=`, `/`, `*`, `*args`, `**kwargs`); None when
    inspect cannot tell (some built-ins)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    tokens: List[str] = []
    keyword_only_marked = False
    listed = list(signature.parameters.values())
    for index, parameter in enumerate(listed):
        kind = parameter.kind
        if kind is parameter.VAR_POSITIONAL:
            tokens.append(f"*{parameter.name}")
            keyword_only_marked = True
        elif kind is parameter.VAR_KEYWORD:
            tokens.append(f"**{parameter.name}")
        else:
            if kind is parameter.KEYWORD_ONLY and not keyword_only_marked:
                tokens.append("*")
                keyword_only_marked = True
            default = "" if parameter.default is parameter.empty else "="
            tokens.append(f"{parameter.name}{default}")
        following = listed[index + 1].kind if index + 1 < len(listed) else None
        if kind is parameter.POSITIONAL_ONLY and following is not parameter.POSITIONAL_ONLY:
            tokens.append("/")
    return tokens


def function_kind(function: Any) -> str:
    if inspect.iscoroutinefunction(function):
        return "coroutine function"
    if inspect.isasyncgenfunction(function):
        return "async generator function"
    if inspect.isgeneratorfunction(function):
        return "generator function"
    return "function"


def record_function(function: Any) -> Entry:
    return {"kind": function_kind(function), "parameters": parameters(function)}


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _defined_by_package(cls: type, name: str) -> bool:
    """Whether the class that gives `cls` its `name` is one of this package's (not object,
    Exception, int or enum.Enum, whose members the recorded ancestors stand for)."""
    for ancestor in cls.__mro__:
        if name in vars(ancestor):
            return ancestor.__module__.split(".")[0] == PACKAGE
    return False


def record_member(cls: type, name: str) -> Entry:
    raw = inspect.getattr_static(cls, name)
    if isinstance(raw, property):
        return {"kind": "property"}
    if isinstance(raw, classmethod):
        return {"kind": "classmethod", **record_function(raw.__func__)}
    if isinstance(raw, staticmethod):
        return {"kind": "staticmethod", **record_function(raw.__func__)}
    if inspect.isfunction(raw):
        return {"kind": "method", "function": function_kind(raw), "parameters": parameters(raw)}
    if inspect.isclass(raw):
        return record_class(raw)
    return record_value(raw)


def record_class(cls: type) -> Entry:
    entry: Entry = {
        "kind": "class",
        # Direct bases: the full MRO differs between Python versions (3.11 put enum.ReprEnum
        # under IntEnum). The ancestors are for comparing only; the baseline does not keep them.
        "bases": [_qualified(base) for base in cls.__bases__ if base is not object],
        "ancestors": [_qualified(base) for base in cls.__mro__[1:]],
    }
    if issubclass(cls, enum.Enum):
        entry["enum"] = {member.name: _plain(member.value) for member in cls}
    else:
        entry["parameters"] = parameters(cls)
    if dataclasses.is_dataclass(cls):
        entry["fields"] = [field.name for field in dataclasses.fields(cls)]
    elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
        entry["fields"] = list(cls._fields)
    members = {}
    for name in dir(cls):
        public = not name.startswith("_") or name in PROTOCOL_METHODS
        if not public or name in entry.get("enum", {}) or name in entry.get("fields", ()):
            continue
        if _defined_by_package(cls, name):
            members[name] = record_member(cls, name)
    entry["members"] = members
    return entry


def _plain(value: Any) -> Any:
    return value if isinstance(value, (int, str, float, bool)) or value is None else repr(value)


def record_value(value: Any) -> Entry:
    entry: Entry = {"kind": "value"}
    if isinstance(value, int) and not isinstance(value, bool):
        entry["value"] = value
    return entry


def record_object(value: Any) -> Entry:
    if inspect.isclass(value):
        return record_class(value)
    if inspect.isfunction(value) or inspect.isbuiltin(value):
        return record_function(value)
    return record_value(value)


def record(modules: Mapping[str, ModuleType]) -> Dict[str, Dict[str, Entry]]:
    """The public API of `modules`, as the baseline stores it."""
    return {name: {attribute: record_object(getattr(module, attribute)) for attribute in public_names(module)}
            for name, module in sorted(modules.items())}


# ---- comparing ------------------------------------------------------------------------------------

def _parsed(tokens: List[str]) -> Tuple[List[Tuple[str, str, bool]], Dict[str, bool], bool, bool]:
    """Positional (name, kind, has default), keyword-only name -> has default, *args, **kwargs."""
    positional: List[Tuple[str, str, bool]] = []
    keyword_only: Dict[str, bool] = {}
    var_positional = var_keyword = in_keyword_only = False
    for token in tokens:
        if token == "/":
            positional = [(name, "positional-only", default) for name, _kind, default in positional]
        elif token == "*":
            in_keyword_only = True
        elif token.startswith("**"):
            var_keyword = True
        elif token.startswith("*"):
            var_positional = in_keyword_only = True
        else:
            name, default = token.rstrip("="), token.endswith("=")
            if in_keyword_only:
                keyword_only[name] = default
            else:
                positional.append((name, "positional-or-keyword", default))
    return positional, keyword_only, var_positional, var_keyword


def compare_parameters(where: str, old: Optional[List[str]], new: Optional[List[str]]) -> List[str]:
    if old is None:
        return []
    if new is None:
        return [f"{where}: its parameters can no longer be read (were {old})"]
    old_positional, old_keyword, old_varargs, old_varkw = _parsed(old)
    new_positional, new_keyword, new_varargs, new_varkw = _parsed(new)
    problems = []
    said = f"({', '.join(old)}) is now ({', '.join(new)})"
    for index, (name, kind, default) in enumerate(old_positional):
        if index >= len(new_positional):
            problems.append(f"{where}: positional parameter '{name}' removed: {said}")
            continue
        new_name, new_kind, new_default = new_positional[index]
        if kind == "positional-or-keyword" and (new_kind != kind or new_name != name):
            problems.append(f"{where}: parameter {index + 1} '{name}' is now '{new_name}' ({new_kind}): {said}")
        elif default and not new_default:
            problems.append(f"{where}: parameter '{name}' lost its default: {said}")
    for name, kind, default in new_positional[len(old_positional):]:
        if not default:
            problems.append(f"{where}: new parameter '{name}' has no default: {said}")
    new_by_name = {name: default for name, kind, default in new_positional if kind == "positional-or-keyword"}
    new_by_name.update(new_keyword)
    for name, default in old_keyword.items():
        if name not in new_by_name:
            problems.append(f"{where}: keyword parameter '{name}' removed: {said}")
        elif default and not new_by_name[name]:
            problems.append(f"{where}: keyword parameter '{name}' lost its default: {said}")
    old_names = {name for name, _kind, _default in old_positional} | set(old_keyword)
    for name, default in new_keyword.items():
        if name not in old_names and not default:
            problems.append(f"{where}: new keyword parameter '{name}' has no default: {said}")
    if old_varargs and not new_varargs:
        problems.append(f"{where}: no longer takes *args: {said}")
    if old_varkw and not new_varkw:
        problems.append(f"{where}: no longer takes **kwargs: {said}")
    return problems


def compare_entry(where: str, old: Entry, new: Entry) -> List[str]:
    if old["kind"] != new["kind"]:
        return [f"{where}: was a {old['kind']}, is now a {new['kind']}"]
    problems = []
    if old.get("function", "") != new.get("function", ""):
        problems.append(f"{where}: was a {old['function']}, is now a {new.get('function')}")
    if "value" in old and old["value"] != new.get("value"):
        problems.append(f"{where}: value {old['value']} is now {new.get('value')}")
    if "parameters" in old:
        problems += compare_parameters(where, old["parameters"], new.get("parameters"))
    if old["kind"] == "class":
        lost = [base for base in old["bases"] if base not in new["ancestors"]]
        if lost:
            problems.append(f"{where}: no longer derives from {', '.join(lost)} (bases now {', '.join(new['bases'])})")
        for name, value in old.get("enum", {}).items():
            if name not in new.get("enum", {}):
                problems.append(f"{where}.{name}: enum member removed")
            elif new["enum"][name] != value:
                problems.append(f"{where}.{name}: enum value {value!r} is now {new['enum'][name]!r}")
        for name in old.get("fields", ()):
            if name not in new.get("fields", ()):
                problems.append(f"{where}.{name}: field removed")
        for name, member in old["members"].items():
            if name not in new["members"]:
                problems.append(f"{where}.{name}: removed")
            else:
                problems += compare_entry(f"{where}.{name}", member, new["members"][name])
    return problems


def compare(baseline: Mapping[str, Mapping[str, Entry]], live: Mapping[str, Mapping[str, Entry]]) -> List[str]:
    """What `live` breaks of `baseline`, one line each; empty when it is compatible."""
    problems = []
    for module, names in baseline.items():
        if module not in live:
            problems.append(f"{module}: module removed")
            continue
        for name, entry in names.items():
            if name not in live[module]:
                problems.append(f"{module}.{name}: removed")
            else:
                problems += compare_entry(f"{module}.{name}", entry, live[module][name])
    return problems


def additions(baseline: Mapping[str, Mapping[str, Entry]], live: Mapping[str, Mapping[str, Entry]]) -> List[str]:
    """The public names `live` has that `baseline` does not (members are not listed)."""
    return [f"{module}.{name}" for module, names in live.items() for name in names
            if name not in baseline.get(module, {})]


def load(path: Path = BASELINE) -> Dict[str, Dict[str, Entry]]:
    return json.loads(path.read_text())["modules"]


def _without_ancestors(entry: Any) -> Any:
    if isinstance(entry, dict):
        return {key: _without_ancestors(value) for key, value in entry.items() if key != "ancestors"}
    return entry


def write(api: Mapping[str, Mapping[str, Entry]], path: Path = BASELINE) -> None:
    document = {"about": "The public API of the sheaf Python package: see api_baseline.py. Regenerate with "
                         "`python3 bindings/python/tests/api_baseline.py --update`, only as the README says.",
                "modules": _without_ancestors(api)}
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help=f"record the live API in {BASELINE.name}")
    options = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    live = record(public_modules())
    if options.update:
        write(live)
        print(f"wrote {BASELINE}: {sum(len(names) for names in live.values())} names in {len(live)} modules")
        return 0
    problems = compare(load(), live)
    for line in problems:
        print(f"FAIL: {line}", file=sys.stderr)
    for name in additions(load(), live):
        print(f"added: {name}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
