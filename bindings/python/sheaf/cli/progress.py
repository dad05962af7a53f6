"""The live progress line of the `sheaf` command-line tool (stderr, rewritten in place).

Not part of the public API.
"""

from __future__ import annotations

import os
import time
from typing import Callable, Optional, TextIO

__all__ = ["Progress", "status_line", "format_count", "format_rounded", "format_duration", "format_rate"]

CLEAR_LINE = "\r\x1b[K"      # back to column 0, erase to the end of the line


def format_count(n: int) -> str:
    return f"{n:,}"


def format_rounded(n: float) -> str:
    """A count in at most five characters: 9,999, then 12.3k, 123k, 1.2M ..."""
    if n < 9_999.5:
        return format_count(round(n))
    for unit in ("k", "M", "G", "T"):
        n /= 1000
        if n < 999.5 or unit == "T":
            break
    return (f"{n:.1f}".removesuffix(".0") if n < 99.95 else f"{n:.0f}") + unit


def format_duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f}s"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def format_rate(rate: float) -> str:
    return f"{rate:,.0f}" if rate >= 10 else f"{rate:.1f}"


#: What a line too wide for the terminal gives up, in this order: first what only explains how the
#: list is fetched, then the words around the numbers, then the numbers, the item count last.
ECONOMIES = ("quota", "revalidated", "window", "in flight", "requests", "pages", "note", "prefix", "terse", "rounded", "rate", "eta")


def status_line(snapshot, elapsed: float, width: int, final: bool = False, note: str = "") -> str:
    """The progress line of `snapshot` (None before the first page) `elapsed` seconds after the
    start, in at most `width` characters.

    The whole line is "sheaf: 12,345/100,000 items, 124/1,000 pages, 8 in flight (window 16),
    2,469 items/s, ETA 36s"; the final line has the request count and the time taken instead of
    what is in flight and the ETA, and the `note`. When that does not fit, the parts named in
    ECONOMIES give way one after the other, down to "12.3k/100k 2,469/s ETA 36s" and then to the
    item count alone, so that the count, the rate and the ETA are the last to go.
    """
    if snapshot is None:
        taken = format_duration(elapsed)
        candidates = [f"sheaf: waiting for the first page ({taken})", f"waiting for page 1 ({taken})",
                      f"waiting ({taken})"]
    else:   # made one at a time: on a wide terminal the first one fits
        candidates = (_line(snapshot, elapsed, final, note, frozenset(ECONOMIES[:given_up]))
                      for given_up in range(len(ECONOMIES) + 1))
    text = ""
    for text in candidates:
        if len(text) <= width:
            return text
    return text[:width]


def _line(s, elapsed: float, final: bool, note: str, without: frozenset) -> str:
    terse = "terse" in without
    count = format_rounded if "rounded" in without else format_count
    items = count(s.item_count) + ("" if s.expected_items is None else "/" + count(s.expected_items))
    parts = [items if terse else items + " items"]
    if "pages" not in without:
        pages = format_count(s.page_count)
        parts.append(pages + ("" if s.expected_pages is None else "/" + format_count(s.expected_pages)) + " pages")
    if not final and "in flight" not in without:
        window = f" (window {s.window})" if s.window and "window" not in without else ""
        parts.append(f"{s.requests_in_flight} in flight{window}")
    rate = s.item_count / max(elapsed, 1e-9)
    if "rate" not in without:
        shown = format_rounded(rate) if "rounded" in without and rate >= 10 else format_rate(rate)
        parts.append(shown + ("/s" if terse else " items/s"))
    if final:
        if "requests" not in without:
            revalidated = getattr(s, "requests_revalidated", 0)
            unchanged = f" ({format_count(revalidated)} unchanged, 304)" if revalidated and "revalidated" not in without else ""
            parts.append(f"{s.requests_made} requests{unchanged}")
        if "eta" not in without:
            parts.append(f"in {format_duration(elapsed)}")
    elif s.expected_items is not None and rate > 0 and "eta" not in without:
        parts.append(f"ETA {format_duration(max(s.expected_items - s.item_count, 0) / rate)}")
    left = getattr(s, "quota_remaining", None)
    if left is not None and "quota" not in without:
        reset = getattr(s, "quota_reset", None)
        parts.append(f"quota {format_count(left)} left" + ("" if reset is None else f", resets in {format_duration(reset)}"))
    text = (" " if terse else ", ").join(parts)
    if note and "note" not in without:
        text += f" ({note})"
    return text if "prefix" in without else "sheaf: " + text


class Progress:
    """One status line on a terminal: items, pages, requests in flight, rate and ETA.

    `update` is given where the list stands and redraws at most every `min_interval` seconds
    (the first call always draws). `clear` erases the line (before other output goes to the
    same terminal); `finish` draws the final state and ends the line.
    A disabled Progress does nothing at all.
    """

    def __init__(self, stream: TextIO, enabled: bool, min_interval: float = 0.1,
                 clock: Callable[[], float] = time.monotonic, live: bool = True) -> None:
        self.stream = stream
        self.enabled = enabled
        self.live = live                   # False: only the final line (the items share the terminal)
        self.min_interval = min_interval
        self.clock = clock
        self.start = clock()
        self.last_draw: Optional[float] = None
        self.visible = False
        self.snapshot = None

    # -- the text ------------------------------------------------------------------------------

    def text(self, final: bool = False, note: str = "") -> str:
        """The line as it fits the terminal now (never its last column: no wrap, no scroll)."""
        return status_line(self.snapshot, self.clock() - self.start, self._width() - 1, final, note)

    # -- drawing -------------------------------------------------------------------------------

    def _width(self) -> int:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            columns = 0
        if columns <= 0:  # unknown (a pseudo-terminal nobody sized): $COLUMNS, else 80
            try:
                columns = int(os.environ.get("COLUMNS", ""))
            except ValueError:
                columns = 80
        return max(columns, 20)

    def _draw(self, text: str, end: str = "") -> None:
        try:
            self.stream.write(CLEAR_LINE + text + end)
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False           # the terminal went away: stop drawing, keep working
            return
        self.visible = not end

    def start_waiting(self) -> None:
        """Shows that the list started, before its first page arrives."""
        if self.enabled and self.live:
            self._draw(self.text())
            self.last_draw = self.clock()

    def update(self, snapshot) -> None:
        self.snapshot = snapshot
        if not (self.enabled and self.live):
            return
        now = self.clock()
        if self.last_draw is not None and now - self.last_draw < self.min_interval:
            return
        self.last_draw = now
        self._draw(self.text())

    def clear(self) -> None:
        if self.enabled and self.visible:
            self._draw("")
            self.visible = False

    def redraw(self) -> None:
        if self.enabled:
            self._draw(self.text())

    def finish(self, note: str = "") -> None:
        """Draws the final state and ends the line with a newline."""
        if not self.enabled:
            return
        self._draw(self.text(final=True, note=note), end="\n")
        self.enabled = False
