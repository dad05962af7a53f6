"""What one snapshot of a streamed list adds, with the counts so far."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Dict, List, NamedTuple, Optional

from . import _ffi


class StopReason(enum.IntEnum):
    """Why a list ended (the C ``sheaf_stop_reason``): every reason but FAILED is a success."""

    NONE = _ffi.SHEAF_STOP_NONE                      #: it has not ended
    COMPLETE = _ffi.SHEAF_STOP_COMPLETE              #: every page arrived, the items agree with the total
    ITEM_LIMIT = _ffi.SHEAF_STOP_ITEM_LIMIT          #: ``max_items`` was reached
    PAGE_BUDGET = _ffi.SHEAF_STOP_PAGE_BUDGET        #: ``max_pages`` was reached
    REQUEST_BUDGET = _ffi.SHEAF_STOP_REQUEST_BUDGET  #: ``max_requests`` was reached
    FAILED = _ffi.SHEAF_STOP_FAILED                  #: it failed, was stopped or was cancelled
    BOUND = _ffi.SHEAF_STOP_BOUND                    #: ``until`` was reached: what an earlier run saw
    UNCONFIRMED = _ffi.SHEAF_STOP_UNCONFIRMED        #: one full page, and nothing said it was the last

    @property
    def note(self) -> str:
        """A few words for a person: why the list stopped."""
        return _NOTES[self]


_NOTES = {
    StopReason.NONE: "not ended",
    StopReason.COMPLETE: "complete",
    StopReason.ITEM_LIMIT: "stopped at the item limit",
    StopReason.PAGE_BUDGET: "stopped at the page budget",
    StopReason.REQUEST_BUDGET: "stopped at the request budget",
    StopReason.FAILED: "failed",
    StopReason.BOUND: "stopped at the bound (what an earlier run saw)",
    StopReason.UNCONFIRMED: ("ended after one full page that nothing confirmed was the last: the server may "
                             "page by a parameter Sheaf was not told; describe the paging to read the rest"),
}


@dataclass(frozen=True, repr=False)
class Snapshot:
    """One step of a streamed list: the items it added and where the list stands.

    Snapshots arrive in list order, each extending the last: concatenating every ``items`` gives
    the whole list, as ``Client.fetch_all`` would return it. The first snapshot is page one.

    Attributes:
        items: the items this snapshot added (the delta), decoded from JSON, in order.
        item_count: items delivered so far, this snapshot's included (after de-duplication).
        page_count: pages delivered so far.
        expected_items: the server's total, or None when the list does not report one.
        expected_pages: the pages the plan expects, or None when unknown.
        requests_in_flight: requests of the list waiting for an answer when the snapshot was made.
        requests_made: requests the list had sent by then, retries and redirects included.
        resume_token: the token that goes on after this snapshot (pass it as ``resume=``), or
            None when the list ends with it.
        window: the pages the list let in flight then (it adapts to the server unless the
            client was made with ``adaptive_window=False``).
        requests_revalidated: of ``requests_made``, those answered 304 and served from the
            client's response cache (``Client(cache=...)``).
        quota_remaining: what the server's rate limit at the list's origin had left
            (``X-RateLimit-Remaining``, ``RateLimit``), or None when no answer said.
        quota_reset: seconds until that limit resets, or None.
    """

    items: List[Any]
    item_count: int
    page_count: int
    expected_items: Optional[int]
    expected_pages: Optional[int]
    requests_in_flight: int
    requests_made: int
    resume_token: Optional[str] = None
    window: int = 0
    requests_revalidated: int = 0
    quota_remaining: Optional[int] = None
    quota_reset: Optional[float] = None

    def __repr__(self) -> str:
        expected = "?" if self.expected_items is None else str(self.expected_items)
        pages = "?" if self.expected_pages is None else str(self.expected_pages)
        return (f"Snapshot(+{len(self.items)} items, {self.item_count} of {expected} items, "
                f"{self.page_count} of {pages} pages, {self.requests_in_flight} in flight, "
                f"{self.requests_made} requests made)")

    @property
    def fraction_done(self) -> Optional[float]:
        """item_count / expected_items (capped at 1.0), or None when the total is unknown."""
        if self.expected_items is None:
            return None
        if self.expected_items == 0:
            return 1.0
        return min(1.0, self.item_count / self.expected_items)


class Items(list):  # type: ignore[type-arg]
    """What ``Client.fetch_all`` returns: the items, in order (a plain ``list`` otherwise), and how
    the list ended.

    Attributes:
        stop_reason: :attr:`StopReason.COMPLETE` when the list completed; ``ITEM_LIMIT``,
            ``PAGE_BUDGET`` or ``REQUEST_BUDGET`` when it stopped where its caller asked
            (``max_items``, ``max_pages``, ``max_requests``). A failure is raised instead.
        resume_token: the token that goes on after these items (pass it as ``resume=``), or None
            when the list completed.
        sync_state: for a list that syncs (``until=`` or ``since=``), what to store for the next
            run: ``{"list": the redacted URL of the first page, "field": the pointer, "value": the
            greatest value among these items, or the stored one when none is newer}``; else None.
    """

    def __init__(self, items: List[Any], stop_reason: StopReason, resume_token: Optional[str],
                 sync_state: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(items)
        self.stop_reason = stop_reason
        self.resume_token = resume_token
        self.sync_state = sync_state

    @property
    def complete(self) -> bool:
        """Whether these are all the list's items."""
        return self.resume_token is None


class _WrittenCounts(NamedTuple):
    items: int
    stop_reason: StopReason
    resume_token: Optional[str]


class Written(_WrittenCounts):
    """What ``Client.fetch_to`` returns: how many items it wrote and how the list ended
    (``stop_reason`` and ``resume_token`` as in :class:`Items`), a tuple of those three; and,
    beside them (not a fourth member: code that unpacks or compares three goes on working),
    ``sync_state`` as in :class:`Items`."""

    sync_state: Optional[Dict[str, Any]] = None

    def __new__(cls, items: int, stop_reason: StopReason, resume_token: Optional[str],
                sync_state: Optional[Dict[str, Any]] = None) -> "Written":
        written = super().__new__(cls, items, stop_reason, resume_token)
        written.sync_state = sync_state
        return written

    @property
    def complete(self) -> bool:
        """Whether every item of the list was written."""
        return self.resume_token is None


class Progress(NamedTuple):
    """Where a list stands, as ``Client.fetch_to`` reports it while it writes (the counts a
    :class:`Snapshot` carries, without its items)."""

    item_count: int
    page_count: int
    expected_items: Optional[int]
    expected_pages: Optional[int]
    requests_in_flight: int
    requests_made: int
    window: int = 0
    requests_revalidated: int = 0
    quota_remaining: Optional[int] = None
    quota_reset: Optional[float] = None


__all__ = ["Snapshot", "Items", "Written", "Progress", "StopReason"]
