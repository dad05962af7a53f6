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
"""

from __future__ import annotations

import ctypes
import json
import shlex
from dataclasses import dataclass, fields, replace
from typing import Any, Dict, List, Mapping, Optional, Tuple

from . import _ffi
from .errors import Result, UsageError

#: The signals in the order of the header's enum, with their constants.
SIGNALS: Tuple[Tuple[str, int], ...] = (
    ("items", _ffi.SHEAF_SIGNAL_ITEMS), ("next", _ffi.SHEAF_SIGNAL_NEXT), ("cursor", _ffi.SHEAF_SIGNAL_CURSOR),
    ("total", _ffi.SHEAF_SIGNAL_TOTAL), ("page_count", _ffi.SHEAF_SIGNAL_PAGE_COUNT),
    ("has_more", _ffi.SHEAF_SIGNAL_HAS_MORE), ("is_last", _ffi.SHEAF_SIGNAL_IS_LAST),
)

_PAGING_KINDS = {"detect": _ffi.SHEAF_PAGING_DETECT, "single": _ffi.SHEAF_PAGING_SINGLE,
                 "next": _ffi.SHEAF_PAGING_NEXT, "page": _ffi.SHEAF_PAGING_PAGE_NUMBER,
                 "offset": _ffi.SHEAF_PAGING_OFFSET, "cursor": _ffi.SHEAF_PAGING_CURSOR}
#: The library's names of the paging kinds (its description JSON) -> this module's.
_KIND_NAMES = {"detect": "detect", "single": "single", "next": "next", "page_number": "page",
               "offset": "offset", "cursor": "cursor"}
_SOURCE_PREFIXES = (("header:", _ffi.SHEAF_SOURCE_HEADER), ("link:", _ffi.SHEAF_SOURCE_LINK),
                    ("last-item:", _ffi.SHEAF_SOURCE_LAST_ITEM))
_SOURCE_NAMES = {"header": "header:", "link": "link:", "last_item": "last-item:"}


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

    def merged(self, parts: Mapping[str, Any]) -> "Description":
        """This description with `parts` (keyword arguments of the same names) replacing fields."""
        known = {field.name for field in fields(self)}
        unknown = sorted(set(parts) - known)
        if unknown:
            raise UsageError(Result.INVALID_ARGUMENT, f"unknown description option(s): {', '.join(unknown)}")
        return replace(self, **{name: value for name, value in parts.items() if value is not None})

    def apply(self, handle: _ffi.ListHandle) -> None:
        """Describes the C list `handle` (each call raises UsageError on a bad value)."""
        lib = _ffi.lib
        for name in ("preset", "paging", "size_param", "items", "next", "cursor", "total", "page_count",
                     "has_more", "is_last", "id"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise UsageError(Result.INVALID_ARGUMENT, f"{name} must be a str, not {type(value).__name__}")
        if self.preset is not None:
            lib.sheaf_list_use_preset(handle, _ffi.encode(self.preset))
        # Only what the C calls cannot take is checked here: the library checks the values.
        paging, first, size_param, size = self.paging, self.first, self.size_param, self.page_size
        if self.preset is not None and any(part is not None for part in (paging, first, size_param, size)):
            # The paging is set as one call: the preset's, with the parts given replacing its own.
            known = presets()[self.preset][1]   # sheaf_list_use_preset knew the name
            if paging is None:
                paging, first = known.paging, known.first if first is None else first
            if size is not None and size_param is None:
                size_param = known.size_param   # a preset names its size parameter
                if size_param is None:
                    raise UsageError(Result.INVALID_ARGUMENT, f"the preset {self.preset} names no size parameter")
        if size is not None and size_param is None:
            raise UsageError(Result.INVALID_ARGUMENT, "page_size needs size_param, or a preset that names one")
        kind, param = _paging(paging)
        if kind is None and size_param is not None:
            kind = _ffi.SHEAF_PAGING_DETECT   # the default, set so that the library judges the size
        if kind is not None:
            if first is None:
                first = 1 if kind == _ffi.SHEAF_PAGING_PAGE_NUMBER else 0
            lib.sheaf_list_set_paging(handle, kind, _ffi.encode(param), _whole(first, "first"), _ffi.encode(size_param),
                                      _whole(size, "page_size") if size is not None else 0)
        elif first is not None:   # the library would ignore it (no paging kind numbers pages)
            raise UsageError(Result.INVALID_ARGUMENT, "first goes with paging")
        for name, signal in SIGNALS:
            value = getattr(self, name)
            if value is not None:
                source, where = _source(value)
                lib.sheaf_list_set_signal(handle, signal, source, _ffi.encode(where))
        if self.id is not None:
            lib.sheaf_list_set_signal(handle, _ffi.SHEAF_SIGNAL_IDENTITY, _ffi.SHEAF_SOURCE_ITEM, _ffi.encode(self.id))

    @classmethod
    def from_json(cls, text: Any) -> "Description":
        """The description in the library's JSON form (``sheaf_list_description``)."""
        data = json.loads(text) if isinstance(text, (str, bytes)) else text
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
            "plan": data.get("plan"), "preset": data.get("preset"), "detected": tuple(detected),
        }
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
        lib.sheaf_preset_description(_ffi.encode(name), ctypes.byref(pointer), ctypes.byref(length))
        data = json.loads(_ffi.take_string(pointer, length.value))
        result[name] = (data.get("summary", ""), Description.from_json(data))
    return result


def _paging(text: Optional[str]) -> Tuple[Optional[int], Optional[str]]:
    if text is None:
        return None, None
    kind, _, param = text.partition(":")
    if kind not in _PAGING_KINDS or (param == "") == (kind in ("page", "offset", "cursor")):
        raise UsageError(Result.INVALID_ARGUMENT,
                         f"paging must be detect, single, next, page:NAME, offset:NAME or cursor:NAME, not {text!r}")
    return _PAGING_KINDS[kind], param or None


def _source(text: str) -> Tuple[int, Optional[str]]:
    """A signal's spelling as (source, where)."""
    if text == "none":
        return _ffi.SHEAF_SOURCE_NONE, None
    if text == "detect":
        return _ffi.SHEAF_SOURCE_DETECT, None
    for prefix, source in _SOURCE_PREFIXES:
        if text.startswith(prefix):
            return source, text[len(prefix):]
    return _ffi.SHEAF_SOURCE_BODY, text


def _spelling(value: Mapping[str, Any]) -> str:
    """The library's {"source", "where"} as this module spells it."""
    source, where = value.get("source"), value.get("where") or ""
    if source in ("body", "item"):
        return where
    if source == "detect":
        return "detect"
    return _SOURCE_NAMES.get(source, "") + where


def _whole(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not -(1 << 63) <= value < 1 << 63:
        raise UsageError(Result.INVALID_ARGUMENT, f"{name} must be an int, not {value!r}")
    return value


__all__ = ["Description", "presets", "SIGNALS"]
