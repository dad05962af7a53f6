"""Groups: many lists run as one job on one client (``Client.fetch_many``, ``Client.fetch_each``
and their streams).

The lists of a group share the client's window for each origin, so 300 lists started together
send what one list would. A group is pulled on the caller's thread as a list is
(``sheaf_group_start_pull`` + ``sheaf_group_next``): each delta says which list it belongs to,
the items that list gained, and, on the list's last delta, how it ended. The lists keep no items
in C (the deltas carry them), so a stream's memory is bounded by the window.

A group owns its lists once they have joined it: a :class:`GroupRun` frees them all with the
group. Nothing a list brought is lost to another list's failure: a failed list's items so far,
its error and its resume token stay in its :class:`ListOutcome`.
"""

from __future__ import annotations

import ctypes
import json
import re
import threading
from ctypes import POINTER, byref
from dataclasses import dataclass, field
from typing import Any, Dict, Generator, Iterator, List, Optional, Sequence, Tuple, Union, overload

from . import _ffi
from ._closing import Closing
from ._ffi import lib
from ._run import PENDING, ListRun, delta_items, pull
from .errors import Error, PartialError, Result, UsageError, encode, error_for
from .snapshot import StopReason

#: How long one sheaf_group_next call may wait: Ctrl-C is seen between two calls.
_PULL_MILLISECONDS = 250

#: A {JSON pointer} of a fan-out template.
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


@dataclass
class ListOutcome:
    """One list of a group, once the group has ended (or was left).

    Attributes:
        index: the list's place in the group: 0, 1, ... in the order lists joined (a fan-out's
            children join as the parent's pages bring them).
        tag: the list's tag: the one given (``tags=``), else its path; a fan-out child's is the
            value that filled its template (the URL when the template takes several).
        url: the list's path or URL as it can be fetched again (what ``fetch_many`` was given;
            for a fan-out child, the URL the library made from its template, at every level,
            with no credential or secret query value in it), or None when the library could
            not say.
        items: every item the list delivered, in order (empty for a fan-out's parent, whose
            items name the children and are not delivered).
        error: why the list failed (a :class:`sheaf.Error` subclass, whose ``items`` are these
            ``items``), or None when it ended whole. A list a fail-fast group cancelled, or one
            still running when the group was left, has a :class:`StoppedError`.
        resume_token: for a list that failed or stopped at a budget, the token that goes on
            after ``items``; None once it completed.
        parent: True for a fan-out's parent list: the one given to ``fetch_many``'s ``each=``, or a
            list of a middle level of a fan-out of several templates.
        templates: for a parent, the templates its items fill, in order (what fetches its
            children again); empty for a list of items.
        stop_reason: why the list ended (``COMPLETE``, ``ITEM_LIMIT``, ``PAGE_BUDGET``,
            ``REQUEST_BUDGET``, ``BOUND``; ``FAILED`` for a failed list; ``NONE`` for one that
            never ended), as ``fetch_all``'s items say.
    """

    index: int
    tag: str
    url: Optional[str]
    items: List[Any] = field(default_factory=list)
    error: Optional[Error] = None
    resume_token: Optional[str] = None
    parent: bool = False
    stop_reason: StopReason = StopReason.NONE
    templates: Tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the list ended whole."""
        return self.error is None


class GroupResult(Sequence[ListOutcome]):
    """Every list of a group, in the order they joined: a sequence of :class:`ListOutcome`.

    ``ok`` says whether every list ended whole, ``failed`` and ``succeeded`` split them, and
    ``error`` is the group's own outcome (None when every list succeeded; a
    :class:`PartialError` when some failed; with ``fail_fast``, the first failure's error).
    """

    def __init__(self, lists: List[ListOutcome], error: Optional[Error]) -> None:
        self.lists = lists
        self.error = error

    @overload
    def __getitem__(self, index: int) -> ListOutcome: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[ListOutcome]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[ListOutcome, Sequence[ListOutcome]]:
        return self.lists[index]

    def __len__(self) -> int:
        return len(self.lists)

    @property
    def ok(self) -> bool:
        """True when every list (a fan-out's parent included) ended whole."""
        return self.error is None and all(outcome.ok for outcome in self.lists)

    @property
    def failed(self) -> List[ListOutcome]:
        """The lists that failed, in order: give them back to :meth:`Client.fetch_many` to fetch
        them again from where they stopped."""
        return [outcome for outcome in self.lists if not outcome.ok]

    @property
    def succeeded(self) -> List[ListOutcome]:
        """The lists that ended whole, in order."""
        return [outcome for outcome in self.lists if outcome.ok]

    def by_tag(self) -> Dict[str, ListOutcome]:
        """The lists by tag (a fan-out's parent left out when a child has the same tag)."""
        return {outcome.tag: outcome for outcome in sorted(self.lists, key=lambda outcome: not outcome.parent)}

    def __repr__(self) -> str:
        return f"<sheaf.GroupResult {len(self.lists)} lists, {len(self.failed)} failed>"


@dataclass
class GroupDelta:
    """What one delta of a group brought (what the group streams yield).

    Attributes:
        index: the list's place in the group (``ListOutcome.index``).
        tag: the list's tag.
        items: the items the list gained, in order (empty on its last delta).
        item_count: the items the list has delivered so far.
        finished: True on the list's last delta.
        error: on the last delta of a list that failed, why (a :class:`sheaf.Error`); else None.
        resume_token: on the last delta of a list that failed, the token that goes on after its
            items; else None.
        parent: True for a fan-out's parent, whose only delta is its last.
    """

    index: int
    tag: str
    items: List[Any]
    item_count: int
    finished: bool
    error: Optional[Error] = None
    resume_token: Optional[str] = None
    parent: bool = False


@dataclass
class _Member:
    """What the binding knows of a list of its group: its tag, URL, and whether it is a parent."""

    tag: str
    url: Optional[str]
    parent: bool = False
    templates: Tuple[str, ...] = ()


class GroupRun:
    """A C group and the lists it took: described, then started once, pulled to its end, freed.

    Threads: the thread that pulls describes, starts, pulls and frees the group;
    ``sheaf_group_cancel`` is the only call made from elsewhere, always under ``lock`` so it
    never meets a freed group.
    """

    def __init__(self, client: Any) -> None:
        if client.closed:
            raise UsageError(Result.STATE, "the client is closed")
        if client.transport is not None:
            # A fan-out's children are made by the library, which has no Python transport for them.
            raise UsageError(Result.UNSUPPORTED, "groups run on the library's HTTP transport: "
                                                 "a client with a Python transport cannot run them")
        self.client = client
        handle = _ffi.GroupHandle()
        lib.sheaf_group_new(byref(handle), client._handle)
        self.handle: Optional[_ffi.GroupHandle] = handle
        self.lock = threading.Lock()
        self.members: Dict[int, _Member] = {}
        self.started = False
        self.ended = False
        self.cancel_requested = False
        #: Where sheaf_group_delta_has_long_digits answers (see _delta_of).
        self._long_digits = ctypes.c_int(1)
        self.outcome = _ffi.SHEAF_OK
        self.detail: Dict[str, Any] = {}
        self._pulled = POINTER(_ffi.GroupDeltaStruct)()

    # ---- describing -------------------------------------------------------------------------

    def set_options(self, ordered: bool, fail_fast: bool, missing: str = "skip") -> None:
        if missing not in ("skip", "fail"):
            raise UsageError(Result.INVALID_ARGUMENT, f"missing must be 'skip' or 'fail', not {missing!r}")
        for option, value in ((_ffi.SHEAF_GROUP_ORDERED, ordered), (_ffi.SHEAF_GROUP_FAIL_FAST, fail_fast),
                              (_ffi.SHEAF_GROUP_MISSING_FAILS, missing == "fail")):
            lib.sheaf_group_set_option(self.handle, option, 1 if value else 0)

    def add(self, run: ListRun, path: str, tag: Optional[str]) -> int:
        """Hands `run`'s list to the group (it is the group's from now on; freed with it)."""
        if tag is not None and not isinstance(tag, str):
            raise UsageError(Result.INVALID_ARGUMENT, f"a tag must be a str, not {type(tag).__name__}")
        index = ctypes.c_size_t()
        try:
            lib.sheaf_group_add(self.handle, run.handle, encode(tag, "a tag"), byref(index))
        except BaseException:
            run.close()
            raise
        run.handle = None   # the group's now: the run's close must not free it
        self.members[index.value] = _Member(path if tag is None else tag, path)
        return index.value

    def add_each(self, parent: ListRun, parent_path: str, templates: Sequence[str], child: ListRun) -> int:
        """Hands a fan-out to the group: `parent`'s items fill `templates` into child lists run
        as `child` describes (both lists are the group's from now on)."""
        array = (ctypes.c_char_p * len(templates))(*(encode(template, "a template") for template in templates))
        index = ctypes.c_size_t()
        try:
            lib.sheaf_group_add_each(self.handle, parent.handle, array, len(templates), child.handle, byref(index))
        except BaseException:
            parent.close()
            child.close()
            raise
        parent.handle = child.handle = None
        self.members[index.value] = _Member(parent_path, parent_path, parent=True)
        return index.value

    # ---- running ----------------------------------------------------------------------------

    def start(self, notify_fd: Optional[int] = None) -> None:
        """Starts every list for pulling (with `notify_fd`, written to when a delta or the end is
        ready: an event loop's wake-up)."""
        if self.client.closed:
            raise UsageError(Result.STATE, "the client was closed before the group started")
        if notify_fd is not None:
            lib.sheaf_group_set_notify_fd(self.handle, notify_fd)
        lib.sheaf_group_start_pull(self.handle)
        with self.lock:
            self.started = True
            if self.cancel_requested:   # cancel() came before the start
                lib.sheaf_group_cancel(self.handle)

    def take(self, milliseconds: int) -> Any:
        """The next delta as a :class:`GroupDelta`, None once the group has ended (its outcome
        is then read), or PENDING when none came within `milliseconds` (0: no wait)."""
        delta = pull(lib.sheaf_group_next, self.handle, milliseconds, self._pulled, _ffi.GROUP_DELTA_VERSION,
                     "group delta")
        if delta is None:
            self._read_outcome()
            return None
        return delta if delta is PENDING else self._delta_of(delta)

    def next_delta(self) -> Optional[GroupDelta]:
        """The next delta, or None once the group has ended. Interruptible by Ctrl-C between waits."""
        while True:
            taken = self.take(_PULL_MILLISECONDS)
            if taken is not PENDING:
                return taken

    def _delta_of(self, delta: _ffi.GroupDeltaStruct) -> GroupDelta:
        index = delta.list
        member = self.members.get(index)
        if member is None:   # a fan-out's child, joined as its parent's pages came
            tag = _ffi.decode(delta.tag)
            member = self.members[index] = _Member(tag, self._url_of(index))
        if delta.version >= 2 and delta.parent:   # a parent (a middle level's too): its templates
            member.parent = True
            member.templates = tuple(json.loads(delta.templates_json.decode("utf-8")))
        items: List[Any] = []
        if delta.delta_items:
            lib.sheaf_group_delta_has_long_digits(self.handle, byref(self._long_digits))
            items = delta_items(delta.delta_json, delta.delta_length, bool(self._long_digits.value))
        taken = GroupDelta(index, member.tag, items, delta.items, bool(delta.finished), parent=member.parent)
        if delta.finished and delta.result not in _ffi.SUCCESSES:
            taken.error, taken.resume_token = self.list_failure(index, delta.result)
        return taken

    def _url_of(self, index: int) -> Optional[str]:
        """The URL the library made for the list at `index` (a fan-out's child), with no
        credential in it; None when it cannot say."""
        handle = lib.sheaf_group_list(self.handle, index)
        pointer = ctypes.c_void_p()
        if not handle or lib.sheaf_list_url(handle, byref(pointer)) != _ffi.SHEAF_OK:
            return None
        return _ffi.take_string(pointer).decode("utf-8", "replace")

    def list_failure(self, index: int, result: int) -> Tuple[Error, Optional[str]]:
        """The error a list ended with and the token that goes on after what it delivered."""
        handle = lib.sheaf_group_list(self.handle, index)
        resume = _resume_token(handle)
        detail = _ffi.list_error_detail(handle) if handle else {}
        return error_for(result, resume_token=resume, **detail), resume

    def _read_outcome(self) -> None:
        self.outcome = lib.sheaf_group_wait(self.handle)   # at once: every delta was taken
        self.ended = True
        self.detail = _ffi.group_error_detail(self.handle) if self.outcome not in _ffi.SUCCESSES else {}

    def group_error(self) -> Optional[Error]:
        """The group's own failure once it has ended (None when every list succeeded)."""
        if self.outcome in _ffi.SUCCESSES:
            return None
        return error_for(self.outcome, **self.detail)

    def outcomes(self, items: Dict[int, List[Any]], ended: Dict[int, Optional[Tuple[Error, Optional[str]]]]) -> List[ListOutcome]:
        """Every list of the group, with the items its deltas brought and how it ended (`ended`:
        the failure, or None, of each list whose last delta came). A list whose last delta did
        not come (the group was cancelled) has a StoppedError and its resume token."""
        lists = []
        for index in range(lib.sheaf_group_count(self.handle)):
            member = self.members.get(index) or _Member("", None)   # joined, but never delivered
            handle = lib.sheaf_group_list(self.handle, index)
            status = _ffi.ListStatusStruct(version=_ffi.LIST_STATUS_VERSION)
            lib.sheaf_list_get_status(handle, byref(status))
            outcome = ListOutcome(index, member.tag, member.url, items.get(index, []), parent=member.parent,
                                  stop_reason=StopReason(status.stop_reason), templates=member.templates)
            if outcome.stop_reason in (StopReason.ITEM_LIMIT, StopReason.PAGE_BUDGET, StopReason.REQUEST_BUDGET):
                outcome.resume_token = _resume_token(handle)   # a budget reached: the rest goes on from here
            if index in ended:
                failure = ended[index]
            else:
                resume = _resume_token(handle)
                failure = (error_for(Result.CANCELLED, "the list was stopped before its end", resume_token=resume),
                           resume)
            if failure is not None:
                outcome.error, outcome.resume_token = failure
                outcome.error.items = outcome.items
            lists.append(outcome)
        return lists

    def cancel(self) -> None:
        """Asks every list to stop (any thread, any time; a no-op once the group is freed)."""
        with self.lock:
            self.cancel_requested = True
            if self.handle is not None and self.started:
                lib.sheaf_group_cancel(self.handle)

    def close(self) -> None:
        """Stops the group if it runs and frees it with its lists. Idempotent."""
        if self.handle is None:
            return
        if self.started and not self.ended:
            self.cancel()
        with self.lock:
            handle, self.handle = self.handle, None
        lib.sheaf_group_free(handle)   # waits out the group's threads: nothing is fetched after this


def _resume_token(handle: _ffi.ListHandle) -> Optional[str]:
    if not handle:
        return None
    pointer = ctypes.c_void_p()
    lib.sheaf_list_resume_token(handle, byref(pointer))
    return _ffi.take_string(pointer).decode("ascii") if pointer.value else None


def placeholders(template: str) -> int:
    """How many {JSON pointer}s `template` has."""
    return len(_PLACEHOLDER.findall(template))


# ---- running a group to its end, or as a stream --------------------------------------------------

def fetch_group(run: GroupRun, check: bool) -> GroupResult:
    """Runs `run` to its end, keeping each list's items (fetch_many's and fetch_each's loop)."""
    items: Dict[int, List[Any]] = {}
    ended: Dict[int, Optional[Tuple[Error, Optional[str]]]] = {}
    try:
        run.start()
        while (delta := run.next_delta()) is not None:   # bounded by the group: a delta or the end
            items.setdefault(delta.index, []).extend(delta.items)
            if delta.finished:
                ended[delta.index] = None if delta.error is None else (delta.error, delta.resume_token)
        result = GroupResult(run.outcomes(items, ended), run.group_error())
    finally:
        run.close()   # also on Ctrl-C: cancels what is in flight
    if check:
        raise_for(result)
    return result


def raise_for(result: GroupResult) -> None:
    """Raises the group's failure, carrying `result` (``error.result``), if it failed."""
    error = result.error
    if error is None:
        return
    error.result = result   # type: ignore[attr-defined]
    raise error


class GroupStream(Iterator[GroupDelta], Closing):
    """The deltas of a group's lists, as they arrive (in the order the lists joined with
    ``ordered=True``), each a :class:`GroupDelta` (what ``Client.stream_many`` and
    ``Client.stream_each`` return).

    The group starts at the first ``next()``. Nothing is kept: each delta's items are yielded
    once. A list that fails says so on its last delta (``error``, ``resume_token``); once the
    group has ended, ``result`` holds every list's outcome (without items), and with ``check``
    the group's failure is raised (a :class:`PartialError` carrying ``result``, or with
    ``fail_fast`` the first failure).

    Leaving early stops every list and abandons their in-flight requests: breaking out of a
    ``for`` loop (even with the stream still referenced), ``close()``, leaving a ``with`` block
    or the stream being garbage collected. ``cancel()`` may be called from any thread.
    """

    def __init__(self, run: GroupRun, check: bool = True) -> None:
        self._run: Optional[GroupRun] = run
        # The outcome, in a list the generator shares: a generator holding the stream would make
        # a cycle, and a stream left in a `for` loop's break must be released at once.
        self._result: List[Optional[GroupResult]] = [None]
        self._deltas = self._generate(run, self._result, check)

    @staticmethod
    def _generate(run: GroupRun, result: List[Optional[GroupResult]], check: bool) -> Generator[GroupDelta, None, None]:
        ended: Dict[int, Optional[Tuple[Error, Optional[str]]]] = {}
        try:
            run.start()
            while (delta := run.next_delta()) is not None:
                if delta.finished:
                    ended[delta.index] = None if delta.error is None else (delta.error, delta.resume_token)
                yield delta
            result[0] = GroupResult(run.outcomes({}, ended), run.group_error())
        finally:
            run.close()
        if check:
            raise_for(result[0])

    def __iter__(self) -> Iterator[GroupDelta]:
        # A generator only the caller's loop holds: a `break` releases it, and its exit stops
        # the group even while the stream itself stays referenced.
        return self._until_released()

    def _until_released(self) -> Generator[GroupDelta, None, None]:
        try:
            yield from self._deltas
        finally:
            self.close()

    def __next__(self) -> GroupDelta:
        return next(self._deltas)

    @property
    def result(self) -> Optional[GroupResult]:
        """Every list's outcome (no items: they were yielded) once the group has ended; None
        before, and when the stream was left early."""
        return self._result[0]

    def cancel(self) -> None:
        """Asks every list to stop; callable from any thread."""
        run = self._run
        if run is not None:
            run.cancel()

    def close(self) -> None:
        """Stops the group if it still runs, cancels what is in flight, frees it. Idempotent.
        From another thread than the one iterating, use :meth:`cancel`."""
        run, self._run = self._run, None
        self._deltas.close()
        if run is not None:
            run.close()


__all__ = ["ListOutcome", "GroupResult", "GroupDelta", "GroupStream"]
