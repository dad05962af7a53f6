"""How a list paginates, as one value: the paging kind and where each signal is read.

Every part left as None is detected by the library from the first page; a preset pins the shape
of a known API (``sheaf.presets()`` lists them, from the library). The same spellings serve the
``sheaf`` command line, so a description prints as the flags that pin it (``flags()``).

Paging (``paging=``): ``"detect"`` (the default), ``"single"`` (one response), ``"next"`` (follow
the next signal page by page), ``"page:NAME"`` (page k is ``?NAME=first+k``), ``"offset:NAME"``
(``?NAME=first+k*served``), ``"cursor:NAME"`` (``?NAME=<cursor>``), with ``first`` (default 1 for
page numbers, 0 for offsets), ``size_param`` and ``page_size``.

A signal (``items``, ``next``, ``cursor``, ``total``, ``page_count``, ``has_more``, ``is_last``):
``"/pointer"`` (a JSON pointer into the body; ``""`` for a body that is the array),
``"header:NAME"``, ``"link:REL"`` (a relation of the Link header), ``"last-item:/pointer"`` (in the
page's last item: Stripe's cursor), or ``"none"`` (the list has no such signal). ``id`` is a
pointer inside each item.

Incremental sync: ``until=("/id", 12345)`` ends a newest-first list, as a success
(``StopReason.BOUND``), at the first item whose value at the pointer is at or below the bound
(numbers compare as numbers, exactly; anything else as strings, so ISO-8601 timestamps work; an
item without the field does not stop it). ``since=("since", "/updated_at", value)`` sends
``?since=value`` on the first request (not while `value` is None) and records the field. Either
way the run's ``sync_state`` is the value to give the next run. A number comes back as a
:class:`JSONNumber`, a float that keeps the library's text of it (``str(value)``) and goes back to
the library as that text, so that a bound never moves by a float's rounding
(``1.00000000000000012`` stays that, not ``1.0000000000000002``); a ``decimal.Decimal`` is sent
exactly too.

Splitting a cursor list: ``split="/created:created[gte],created[lt]"`` (FIELD:LOWER,UPPER, and
``:oldest_first`` for a list served oldest first) names the field the list is ordered by and the
query parameters of its range filter (an end is in the range when its name says so: ``[gte]``,
``[lte]``, ``_min``, ``_max``); the list is then read as pieces of that range side by side, each
item once, in the list's order. The ``stripe``, ``slack`` and ``shopify`` presets carry theirs;
``split="none"`` walks such a list one page at a time.

Each of these is a spelling of the library's description JSON (``sheaf_list_set_description``;
the schema is ``include/sheaf/description.schema.json``): ``to_json()`` writes it, ``json=`` takes
one as it is (what ``from_json``, ``presets()`` and ``sheaf get --explain --format json`` give)
with the other fields replacing its parts, and the library alone judges the values.
"""

from __future__ import annotations

import ctypes
import decimal
import json as _json
import re
import secrets
import shlex
from dataclasses import dataclass, field, fields, replace
from typing import Any, Dict, List, Mapping, Optional, Tuple

from . import _ffi
from .errors import Result, UsageError, encode

#: The signals in the order of the header's enum, with their constants.
SIGNALS: Tuple[Tuple[str, int], ...] = (
    ("items", _ffi.SHEAF_SIGNAL_ITEMS), ("next", _ffi.SHEAF_SIGNAL_NEXT), ("cursor", _ffi.SHEAF_SIGNAL_CURSOR),
    ("total", _ffi.SHEAF_SIGNAL_TOTAL), ("page_count", _ffi.SHEAF_SIGNAL_PAGE_COUNT),
    ("has_more", _ffi.SHEAF_SIGNAL_HAS_MORE), ("is_last", _ffi.SHEAF_SIGNAL_IS_LAST),
)

#: The library's names of the paging kinds (its description JSON) -> this module's.
_KIND_NAMES = {"detect": "detect", "single": "single", "next": "next", "page_number": "page",
               "offset": "offset", "cursor": "cursor"}
#: This module's names of the paging kinds -> the library's (any other is passed on, for the
#: library to refuse).
_KIND_SPELLED = {spelled: name for name, spelled in _KIND_NAMES.items()}
_SOURCE_PREFIXES = (("header:", "header"), ("link:", "link"), ("last-item:", "last_item"))
_SOURCE_NAMES = {"header": "header:", "link": "link:", "last_item": "last-item:"}


_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


class JSONNumber(float):
    """A JSON number as the library wrote it: a float for arithmetic and comparison, whose text
    (``str(number)``, ``.text``) is the number exactly as written, which is what goes back to the
    library when it is given as a sync value (``until=``, ``since=``). The library compares
    numbers exactly, whatever their length; a float does not hold ``1.00000000000000012`` (it
    reads 1.0000000000000002) nor ``1e999`` (infinity), and a bound that moved by a float's
    rounding would skip or repeat items. ``json.dumps`` writes it as the float; write ``str(number)``
    to keep it exact.

    ``JSONNumber("12.50")`` takes the text of one JSON number (ValueError for anything else:
    ``NaN``, ``Infinity``, ``1.`` or ``+1`` are not JSON)."""

    __slots__ = ("text",)

    def __new__(cls, text: str) -> "JSONNumber":
        if not isinstance(text, str) or not _JSON_NUMBER.fullmatch(text):
            raise ValueError(f"not a JSON number: {text!r}")
        number = super().__new__(cls, text)
        number.text = text
        return number

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__

    def __reduce__(self):
        return (JSONNumber, (self.text,))


def _exact_int(text: str) -> Any:
    """A JSON integer as an int; past Python's limit on int-string conversion, a JSONNumber."""
    try:
        return int(text)
    except ValueError:
        return JSONNumber(text)


def loads_exact(text: Any, **options: Any) -> Any:
    """``json.loads`` keeping every number exactly: an integer as an int, any other number as a
    :class:`JSONNumber` (never a float that rounds it). ``NaN`` and ``Infinity`` (which Python's
    json accepts) are refused as the JSON they are not."""
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    options.setdefault("parse_constant", refuse)
    return _json.loads(text, parse_float=JSONNumber, parse_int=_exact_int, **options)


def dumps_exact(value: Any, **options: Any) -> str:
    """``json.dumps`` (same options) writing each :class:`JSONNumber` as its own text."""
    numbers: List[str] = []
    mark = f"\x00sheaf-number-{secrets.token_hex(8)}-"

    def marked(part: Any) -> Any:
        if isinstance(part, JSONNumber):
            numbers.append(part.text)
            return f"{mark}{len(numbers) - 1}\x00"
        if isinstance(part, dict):
            return {key: marked(item) for key, item in part.items()}
        if isinstance(part, (list, tuple)):
            return [marked(item) for item in part]
        return part

    text = _json.dumps(marked(value), **options)
    for index, number in enumerate(numbers):
        text = text.replace(_json.dumps(f"{mark}{index}\x00"), number, 1)
    return text


@dataclass(frozen=True)
class Description:
    """A list's pagination; None everywhere (the default) leaves it all to detection."""

    preset: Optional[str] = None
    paging: Optional[str] = None
    first: Optional[int] = None
    size_param: Optional[str] = None
    page_size: Optional[int] = None
    items: Optional[str] = None
    next: Optional[str] = None
    cursor: Optional[str] = None
    total: Optional[str] = None
    page_count: Optional[str] = None
    has_more: Optional[str] = None
    is_last: Optional[str] = None
    id: Optional[str] = None
    #: What the library decided (read-only, from ``Description.from_json``): the plan and the
    #: signals it detected.
    plan: Optional[str] = None
    detected: Tuple[str, ...] = ()
    #: A description in the library's JSON form (what ``sheaf_list_description`` or
    #: ``sheaf_preset_description`` print, or any part of it; ``sheaf get --description``); the
    #: other fields given replace its parts.
    json: Optional[str] = None
    # (After the fields above: a field added in the middle would move the positional ones.)
    #: A bound on a newest-first list: (pointer, value), value a number or a str.
    until: Optional[Tuple[str, Any]] = None
    #: A server-side filter: (query parameter, pointer) or (query parameter, pointer, value).
    since: Optional[Tuple[Any, ...]] = None
    #: A cursor list's range filter, ``"FIELD:LOWER,UPPER[:ORDER]"``, read in pieces; "none": not split.
    split: Optional[str] = None
    #: A list behind a POST: the method of every page request ("POST" when a body or a GraphQL
    #: query is given), and its body: a dict or list (sent as JSON; ``json=`` of one is this
    #: field), or bytes or a str as they are. Never shown in a repr or a message.
    method: Optional[str] = None
    body: Any = field(default=None, repr=False, hash=False)
    #: The body's content type (default ``application/json``).
    content_type: Optional[str] = None
    #: The endpoint only reads (a POST that queries): its pages may be sent again on a failure.
    read_only: Optional[bool] = None
    #: A GraphQL connection: the query text, the pointer to the connection in the answer
    #: (``/data/repository/issues``), the query's other variables, and whether an answer with
    #: data and errors is read rather than failed. ``page_size`` is its ``first``.
    graphql: Optional[str] = None
    connection: Optional[str] = None
    variables: Any = field(default=None, repr=False, hash=False)
    allow_partial: Optional[bool] = None
    #: Connections inside each node to complete, by their pointer in the node: the query that
    #: pages one node's connection (taking ``$id``, ``$first``, ``$after``), or a dict of the
    #: description's nested fields (``{"query": ..., "page_size": 50, "connection": ...}``).
    nested: Any = field(default=None, repr=False, hash=False)

    def merged(self, parts: Mapping[str, Any]) -> "Description":
        """This description with `parts` (keyword arguments of the same names) replacing fields."""
        known = {field.name for field in fields(self)}
        unknown = sorted(set(parts) - known)
        if unknown:
            raise UsageError(Result.INVALID_ARGUMENT, f"unknown description option(s): {', '.join(unknown)}")
        parts = dict(parts)
        if parts.get("json") is not None and not isinstance(parts["json"], str):
            # json= of a dict or a list is the request's body, as in requests; a str is a description.
            if parts.get("body") is not None:
                raise UsageError(Result.INVALID_ARGUMENT, "give the body once: as json= or as body=")
            parts["body"] = parts.pop("json")
        return replace(self, **{name: value for name, value in parts.items() if value is not None})

    def apply(self, handle: _ffi.ListHandle) -> None:
        """Describes the C list `handle` with :meth:`to_json` (UsageError naming the refused field),
        and sets its method and body."""
        _ffi.lib.sheaf_list_set_description(handle, encode(self.to_json(), "the description"))
        request = self.request_body()
        if request is not None:
            method, data = request
            _ffi.lib.sheaf_list_set_body(handle, encode(method, "the method"),
                                         encode(self.content_type or "application/json", "the content type"),
                                         data, len(data))

    def request_body(self) -> Optional[Tuple[str, bytes]]:
        """The method and the body bytes every page is asked with; None for a plain GET."""
        if self.method is not None and not isinstance(self.method, str):
            raise UsageError(Result.INVALID_ARGUMENT, f"method must be a str, not {type(self.method).__name__}")
        body = self.body
        if self.graphql is not None:
            if not isinstance(self.graphql, str):
                raise UsageError(Result.INVALID_ARGUMENT, f"graphql must be the query's text (a str), not {type(self.graphql).__name__}")
            if body is not None:
                raise UsageError(Result.INVALID_ARGUMENT, "a GraphQL list's body is its query and variables: give graphql= and variables=, not a body")
            variables = self.variables if self.variables is not None else {}
            if not isinstance(variables, Mapping):
                raise UsageError(Result.INVALID_ARGUMENT, f"variables must be a dict, not {type(variables).__name__}")
            body = {"query": self.graphql, "variables": dict(variables)}
        elif self.variables is not None or self.connection is not None:
            raise UsageError(Result.INVALID_ARGUMENT, "variables= and connection= go with graphql=, the query's text")
        if body is None:
            return None if self.method in (None, "GET") else (self.method.upper(), b"")
        if isinstance(body, (dict, list, tuple)):
            try:
                data = dumps_exact(body, separators=(",", ":")).encode()
            except (TypeError, ValueError) as error:
                raise UsageError(Result.INVALID_ARGUMENT, f"the body is not JSON: {error}") from None
        elif isinstance(body, str):
            data = body.encode()
        elif isinstance(body, (bytes, bytearray, memoryview)):
            data = bytes(body)
        else:
            raise UsageError(Result.INVALID_ARGUMENT, f"the body must be a dict, a list, bytes or a str, not {type(body).__name__}")
        return (self.method or "POST").upper(), data

    def to_json(self) -> str:
        """This description in the library's JSON form (``sheaf_list_set_description``): `json`, if
        given, with the other fields given replacing its parts. Only types are checked here; the
        library judges the values, with the same message for C, Python and the command line."""
        for name in ("json", "preset", "paging", "size_param", "items", "next", "cursor", "total", "page_count",
                     "has_more", "is_last", "id"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise UsageError(Result.INVALID_ARGUMENT, f"{name} must be a str, not {type(value).__name__}")
        document: Dict[str, Any] = {}
        if self.json is not None:
            try:
                document = loads_exact(self.json)   # its numbers as written, not as floats
            except (ValueError, TypeError):
                return self.json   # the library says what is wrong with it
            if not isinstance(document, dict) or not all(
                    isinstance(document.get(part, {}), dict) for part in ("paging", "signals")):
                return self.json
        if self.preset is not None:
            document["preset"] = self.preset
        paging = dict(document.get("paging", {}))
        if self.paging is not None:
            # A new kind is the paging parts given alone, as "kind" is in the JSON form.
            kind, _, param = self.paging.partition(":")
            paging = {"kind": _KIND_SPELLED.get(kind, kind), "param": param or None}
        if self.first is not None:
            paging["first"] = self.first
        if self.size_param is not None:
            paging["size_param"] = self.size_param
            paging.pop("size", None)    # a new size parameter goes with its size
        if self.page_size is not None:
            paging["size"] = self.page_size
        if paging:
            document["paging"] = paging
        signals = dict(document.get("signals", {}))
        for name, _ in SIGNALS:
            value = getattr(self, name)
            if value is not None:
                signals[name] = _source(value)
        if self.id is not None:
            signals["identity"] = {"source": "item", "where": self.id}
        if signals:
            document["signals"] = signals
        if self.until is not None:
            document["until"] = _until(self.until)
        if self.since is not None:
            document["since"] = _since(self.since)
        if self.split is not None:
            document["split"] = _split(self.split)
        if self.read_only is not None:
            document["read_only"] = bool(self.read_only)
        if self.graphql is not None or self.connection is not None:
            if not isinstance(self.connection, str):
                raise UsageError(Result.INVALID_ARGUMENT, "a GraphQL list needs connection=, the JSON pointer to its "
                                 "connection in the answer (\"/data/repository/issues\")")
            graphql = dict(document.get("graphql") or {})
            graphql["connection"] = self.connection
            if self.page_size is not None:
                graphql["page_size"] = self.page_size
            if self.allow_partial is not None:
                graphql["allow_partial"] = bool(self.allow_partial)
            if self.nested is not None:
                graphql["nested"] = _nested(self.nested)
            document["graphql"] = graphql
        elif self.allow_partial is not None or self.nested is not None:
            raise UsageError(Result.INVALID_ARGUMENT, "allow_partial= and nested= go with graphql=")
        return dumps_exact(document)

    @classmethod
    def from_json(cls, text: Any) -> "Description":
        """The description in the library's JSON form (``sheaf_list_description``)."""
        data = loads_exact(text) if isinstance(text, (str, bytes)) else text
        printed = text.decode() if isinstance(text, bytes) else text if isinstance(text, str) else dumps_exact(data)
        paging = data["paging"]
        kind = _KIND_NAMES.get(paging.get("kind"), "detect")
        detected = [name for name, value in data["signals"].items() if value and value.get("detected")]
        if paging.get("detected"):
            detected.insert(0, "paging")
        parts: Dict[str, Any] = {
            "paging": f"{kind}:{paging['param']}" if paging.get("param") else kind,
            "first": paging.get("first") if paging.get("param") else None,
            "size_param": paging.get("size_param"),
            "page_size": paging.get("size"),
            "plan": data.get("plan"), "preset": data.get("preset"), "detected": tuple(detected), "json": printed,
        }
        if data.get("until"):
            until = data["until"]
            parts["until"] = (until["pointer"], until["value"]) + ((until["seen"],) if "seen" in until else ())
        if data.get("since"):
            since = data["since"]
            parts["since"] = (since["param"], since["pointer"], since.get("value")) + ((since["seen"],) if "seen" in since else ())
        if data.get("split"):
            parts["split"] = _split_spelling(data["split"])
        for name, _ in SIGNALS + (("identity", 0),):
            value = data["signals"].get(name)
            spelled = "none" if value is None else _spelling(value)
            parts["id" if name == "identity" else name] = spelled if name != "identity" or value else None
        return cls(**parts)

    def flags(self) -> List[str]:
        """The ``sheaf get`` flags that pin this description (detected parts included)."""
        out: List[str] = []
        if self.paging is not None:
            out += ["--paging", self.paging]
            if self.first is not None and ":" in self.paging:
                out += ["--first", str(self.first)]
        if self.size_param is not None and self.page_size is not None:
            out += ["--size-param", self.size_param, "--page-size", str(self.page_size)]
        for name, _ in SIGNALS:
            value = getattr(self, name)
            if value is not None and value != "detect":
                out += ["--" + name.replace("_", "-"), value]
        if self.id is not None:
            out += ["--id", self.id]
        if self.until is not None and len(self.until) == 2:
            out += ["--until", f"{self.until[0]}={dumps_exact(self.until[1])}"]
        if self.since is not None and len(self.since) >= 2:
            out += ["--since-param", str(self.since[0]), "--since-field", str(self.since[1])]
        if self.split is not None:
            out += ["--split", self.split]
        return out

    def command_line(self, url: str) -> str:
        """``sheaf get URL`` with the flags that pin this description, shell-quoted."""
        return " ".join(shlex.quote(word) for word in ["sheaf", "get", url] + self.flags())


def presets() -> Dict[str, Tuple[str, Description]]:
    """Every preset the library knows: name -> (summary, what it pins)."""
    lib = _ffi.lib
    result: Dict[str, Tuple[str, Description]] = {}
    for index in range(lib.sheaf_preset_count()):
        name = _ffi.decode(lib.sheaf_preset_name(index))
        pointer, length = ctypes.c_void_p(), ctypes.c_size_t()
        lib.sheaf_preset_description(encode(name), ctypes.byref(pointer), ctypes.byref(length))
        data = _json.loads(_ffi.take_string(pointer, length.value))
        result[name] = (data.get("summary", ""), Description.from_json(data))
    return result


def _nested(value: Any) -> List[Dict[str, Any]]:
    """nested=: {"/comments": QUERY or {"query": QUERY, ...}} as the description's list."""
    if not isinstance(value, Mapping):
        raise UsageError(Result.INVALID_ARGUMENT, "nested= must be a dict: the connection's pointer in each node "
                         "(\"/comments\") to the query that pages it")
    out = []
    for pointer, spec in value.items():
        entry = dict(spec) if isinstance(spec, Mapping) else {"query": spec}
        entry["field"] = pointer
        out.append(entry)
    return out


def _seen(document: Dict[str, Any], value: Any, what: str) -> Dict[str, Any]:
    """`document` with "seen": the identities delivered at the sync value (a sync_state's), when given."""
    if value is not None:
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise UsageError(Result.INVALID_ARGUMENT, f"{what} is a list of the identities delivered at the value, not {value!r}")
        document["seen"] = [_sync_value(identity, f"an identity of {what}") for identity in value]
    return document


def _until(value: Any) -> Dict[str, Any]:
    """``until=(pointer, value[, seen])`` as the library's {"pointer", "value", "seen"}."""
    if not isinstance(value, (tuple, list)) or len(value) not in (2, 3) or not isinstance(value[0], str):
        raise UsageError(Result.INVALID_ARGUMENT, f"until must be (pointer, value) or (pointer, value, seen), "
                                                  f"as (\"/id\", 12345); not {value!r}")
    return _seen({"pointer": value[0], "value": _sync_value(value[1], "until's value")},
                 value[2] if len(value) == 3 else None, "until's seen")


def _since(value: Any) -> Dict[str, Any]:
    """``since=(param, pointer[, value[, seen]])`` as the library's {"param", "pointer", "value", "seen"}."""
    if (not isinstance(value, (tuple, list)) or len(value) not in (2, 3, 4)
            or not all(isinstance(part, str) for part in value[:2])):
        raise UsageError(Result.INVALID_ARGUMENT,
                         f"since must be (param, pointer) or (param, pointer, value[, seen]), as (\"since\", \"/updated_at\", None); not {value!r}")
    stored = value[2] if len(value) >= 3 else None
    return _seen({"param": value[0], "pointer": value[1], "value": None if stored is None else _sync_value(stored, "since's value")},
                 value[3] if len(value) == 4 else None, "since's seen")


#: Endings of a range parameter's name that say its value is in the range (as the library reads them).
_INCLUSIVE_ENDINGS = ("[gte]", "[lte]", "_gte", "_lte", "_min", "_max", "since")


def _split(value: Any) -> Optional[Dict[str, Any]]:
    """``split="FIELD:LOWER,UPPER[:ORDER]"`` as the library's {"field", "lower", "upper", "order"};
    "none" as null (a preset's split left out)."""
    if not isinstance(value, str):
        raise UsageError(Result.INVALID_ARGUMENT, f"split must be a str, not {type(value).__name__}")
    if value == "none":
        return None
    field, _, rest = value.partition(":")
    bounds, _, order = rest.partition(":")
    lower, comma, upper = bounds.partition(",")
    if not field.startswith("/") or not comma or not lower or not upper or "," in upper:
        raise UsageError(Result.INVALID_ARGUMENT,
                         "a split is FIELD:LOWER,UPPER[:ORDER] (a JSON pointer into each item, the query parameters of "
                         "the range's ends, newest_first or oldest_first), as /created:created[gte],created[lt]; "
                         f"or none; not {value!r}")
    document: Dict[str, Any] = {"field": field, "lower": lower, "upper": upper}
    if order:
        document["order"] = order
    return document


def _split_spelling(split: Mapping[str, Any]) -> Optional[str]:
    """The spelling of the library's "split" member, when the spelling says all of it (the ends'
    inclusiveness as their names say it, no kind pinned); else None (the JSON keeps it)."""
    ends = [split.get("lower", {}), split.get("upper", {})]
    if split.get("kind") or not all(isinstance(end, dict) and isinstance(end.get("param"), str) for end in ends):
        return None
    if any(end["param"].endswith(_INCLUSIVE_ENDINGS) != bool(end.get("inclusive")) for end in ends):
        return None
    order = split.get("order", "newest_first")
    return f"{split['field']}:{ends[0]['param']},{ends[1]['param']}" + ("" if order == "newest_first" else f":{order}")


def _sync_value(value: Any, what: str) -> Any:
    """A value a sync compares, as the description JSON holds it: a str, an int, or a number
    written exactly (a JSONNumber as its text, a Decimal as its digits, a float as the shortest
    text that reads back as it). The library refuses anything else too, but a bool would pass here
    as a number, and a float that is no JSON number (inf, nan) as text that is not JSON."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str, decimal.Decimal)):
        raise UsageError(Result.INVALID_ARGUMENT, f"{what} must be a number or a str, not {type(value).__name__}")
    if isinstance(value, JSONNumber) or isinstance(value, (str, int)):
        return value
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise UsageError(Result.INVALID_ARGUMENT, f"{what} must be a finite number, not {value}")
        return JSONNumber(str(value).replace("E", "e"))
    if value != value or value in (float("inf"), float("-inf")):
        raise UsageError(Result.INVALID_ARGUMENT, f"{what} must be a finite number, not {value!r}")
    return value


def _source(text: str) -> Optional[Dict[str, Any]]:
    """A signal's spelling as the library's {"source", "where"} (None: the list has no such signal)."""
    if text == "none":
        return None
    if text == "detect":
        return {"source": "detect"}
    for prefix, source in _SOURCE_PREFIXES:
        if text.startswith(prefix):
            return {"source": source, "where": text[len(prefix):]}
    return {"source": "body", "where": text}


def _spelling(value: Mapping[str, Any]) -> str:
    """The library's {"source", "where"} as this module spells it."""
    source, where = value.get("source"), value.get("where") or ""
    if source in ("body", "item"):
        return where
    if source == "detect":
        return "detect"
    return _SOURCE_NAMES.get(source, "") + where


__all__ = ["Description", "JSONNumber", "presets", "SIGNALS", "loads_exact", "dumps_exact"]
