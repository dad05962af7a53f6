"""The live progress line of the `sheaf` command-line tool (stderr, rewritten in place).

Not part of the public API.
"""

from __future__ import annotations

import os
import time
from typing import Callable, Optional, TextIO

__all__ = ["Progress", "format_count", "format_duration"]

CLEAR_LINE = "\r\x1b[K"      # back to column 0, erase to the end of the line


def format_count(n: int) -> str:
    return f"{n:,}"


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

    def text(self, final: bool = False) -> str:
        s = self.snapshot
        elapsed = max(self.clock() - self.start, 1e-9)
        if s is None:
            return f"sheaf: waiting for the first page ({format_duration(elapsed)})"
        items, pages = s.item_count, s.page_count
        parts = []
        if s.expected_items is not None:
            parts.append(f"{format_count(items)}/{format_count(s.expected_items)} items")
        else:
            parts.append(f"{format_count(items)} items")
        if s.expected_pages is not None:
            parts.append(f"{format_count(pages)}/{format_count(s.expected_pages)} pages")
        else:
            parts.append(f"{format_count(pages)} pages")
        if not final:
            parts.append(f"{s.requests_in_flight} in flight" + (f" (window {s.window})" if s.window else ""))
        rate = items / elapsed
        parts.append(f"{format_rate(rate)} items/s")
        if final:
            parts.append(f"{s.requests_made} requests")
            parts.append(f"in {format_duration(elapsed)}")
        elif s.expected_items is not None and rate > 0:
            remaining = max(s.expected_items - items, 0)
            parts.append(f"ETA {format_duration(remaining / rate)}")
        return "sheaf: " + ", ".join(parts)

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
        width = self._width() - 1          # never reach the last column: no wrap, no scroll
        if len(text) > width:
            text = text[: max(width - 3, 0)] + "..."
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
        text = self.text(final=True)
        if note:
            text += f" ({note})"
        self._draw(text, end="\n")
        self.enabled = False
