"""A streamed list: an iterator of snapshots that owns the running C list."""

from __future__ import annotations

from typing import Any, Callable, Dict, Generator, Iterator, List, Optional, TypeVar

from . import _ffi
from ._closing import Closing
from ._run import _END, ListRun
from .snapshot import StopReason

#: What a stream yields for each snapshot: a Snapshot, or (``Client.stream_batches``) a RecordBatch.
Taken = TypeVar("Taken")


class SnapshotStream(Iterator[Taken], Closing):
    """The snapshots of one list, in order, as they arrive (what ``Client.stream`` returns, and,
    each snapshot a ``pyarrow.RecordBatch``, ``Client.stream_batches``).

    The list starts at the first ``next()``. Each snapshot's ``items`` is the delta; the stream
    keeps nothing, so memory stays bounded by the window, not by the list. When the list ends it
    raises the failure, if any: a :class:`sheaf.Error` subclass (with empty ``items``: they were
    already yielded), or the exception a Python transport raised, with its traceback.

    Leaving early stops the list and abandons its in-flight requests: breaking out of a ``for``
    loop (even with the stream still referenced: the loop's iterator is released at the
    ``break``, and releasing it closes the stream), ``close()``, or leaving a ``with`` block. A
    stopped stream yields nothing more.
    ``cancel()`` may be called from any thread; iteration then ends with
    :class:`sheaf.StoppedError` (code CANCELLED).
    """

    def __init__(self, run: ListRun, convert: Optional[Callable[[_ffi.SnapshotStruct], Optional[Taken]]] = None) -> None:
        """`convert` makes what is yielded of each snapshot the library hands out (None: nothing
        for that snapshot); without it, a :class:`Snapshot`."""
        self._run: Optional[ListRun] = run
        self._last_run = run   # kept after close: its sync state is read there (no handle needed)
        # The token after the snapshots yielded (from the start until one is), in a list the
        # generator shares: a generator holding the stream would make a cycle, and a stream left
        # in a `for` loop's break must be released at once.
        self._resume = [run.current_resume_token()]
        self._stop_reason = [StopReason.NONE]
        self._snapshots = self._generate(run, self._resume, self._stop_reason, convert)

    @staticmethod
    def _generate(run: ListRun, resume: List[Optional[str]], stop_reason: List[StopReason],
                  convert: Any) -> Generator[Taken, None, None]:
        try:
            run.start()
            while True:
                taken = run.next_snapshot(convert)
                if taken is _END:
                    resume[0] = run.resume_token
                    stop_reason[0] = run.stop_reason
                    break
                resume[0] = taken.resume_token if convert is None else run.current_resume_token()
                if taken is not None:
                    yield taken
            run.raise_outcome([])
        finally:
            run.close()

    def __iter__(self) -> Iterator[Taken]:
        # A generator that only the caller's loop holds: a `break` (or dropping the iterator)
        # releases it, and its exit stops the list even while the stream itself stays referenced.
        return self._until_released()

    def _until_released(self) -> Generator[Taken, None, None]:
        try:
            yield from self._snapshots
        finally:
            self.close()

    def __next__(self) -> Taken:
        return next(self._snapshots)

    @property
    def resume_token(self) -> Optional[str]:
        """The token that goes on after the snapshots yielded so far (pass it as ``resume=``);
        None once the list completed."""
        return self._resume[0]

    @property
    def sync_state(self) -> Optional[Dict[str, Any]]:
        """For a list that syncs (``until=`` or ``since=``), what to store for the next run, through
        the snapshots yielded so far (as :attr:`sheaf.Items.sync_state`); None otherwise."""
        return self._last_run.current_sync_state()

    @property
    def stop_reason(self) -> StopReason:
        """Why the list ended, once the last snapshot was yielded (``COMPLETE``, ``ITEM_LIMIT``,
        ``PAGE_BUDGET``, ``REQUEST_BUDGET``; a failure is raised instead); ``NONE`` before, and
        when the stream was left early."""
        return self._stop_reason[0]

    def cancel(self) -> None:
        """Asks the list to stop; callable from any thread. Iteration ends with StoppedError."""
        run = self._run
        if run is not None:
            run.cancel()

    def close(self) -> None:
        """Stops the list if it still runs, cancels what is in flight, frees it. Idempotent.

        Call it from the thread that iterates (or after iterating); from any other thread, use
        :meth:`cancel`.
        """
        run, self._run = self._run, None
        self._snapshots.close()   # runs the generator's cleanup when it had started
        if run is not None:
            run.close()           # and when it had not


__all__ = ["SnapshotStream"]
