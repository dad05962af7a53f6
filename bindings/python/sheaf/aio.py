"""asyncio: the same lists and requests, awaited without blocking the event loop.

    import sheaf

    async with sheaf.AsyncClient("https://api.example.com", token) as client:
        things = await client.fetch_all("/v1/things")
        async for snapshot in client.stream("/v1/things"):
            render(snapshot.items)
        created = await client.post("/v1/things", json={"name": "x"})

No thread waits on the loop's behalf. A list is pulled as the synchronous client pulls it, but
the library writes to an eventfd the loop watches (``sheaf_list_set_notify_fd``) when a snapshot
or the end is ready, and the loop takes it without waiting. A request's completion is handed to
the loop (``call_soon_threadsafe``) by the library's own thread. Cancelling the task (or leaving
``async for``) stops the list or abandons the request, as Ctrl-C does for the blocking client.
"""

from __future__ import annotations

import asyncio
import functools
import os
from typing import Any, AsyncIterator, Dict, List, Optional, Sequence, Tuple, Union

from . import _ffi
from ._closing import Closing
from ._ffi import lib
from ._run import PENDING, ListRun, Wakeups
from .client import Client, ListOptions, Query, _query_pairs
from .description import Description
from .errors import Error, ItemDecodeError, Result, UsageError
from .group import GroupDelta, GroupResult, GroupRun, ListOutcome, raise_for
from .partition import Partition
from .request import Headers, Response, outcome, prepare
from .snapshot import Items, Snapshot, StopReason
from .watch import Watch


class _Wakeups(Wakeups):
    """The library's wake-ups (an eventfd, or a pipe), watched by the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._loop = loop
        self._ready = asyncio.Event()
        loop.add_reader(self.read_fd, self._readable)

    def _readable(self) -> None:
        self.drain()
        self._ready.set()

    async def wait(self) -> None:
        await self._ready.wait()
        self._ready.clear()

    def close(self) -> None:
        """After the list is freed: it writes no more."""
        self._loop.remove_reader(self.read_fd)
        super().close()


async def _taken(run: ListRun, wakeups: _Wakeups) -> Any:
    """The run's next snapshot (None at the end), waiting on the loop, never in the library."""
    while True:   # bounded by the list: each wake-up brings a snapshot, the end, or nothing new
        taken = run.take(0)
        if taken is not PENDING:
            return taken
        await wakeups.wait()


class AsyncSnapshotStream(AsyncIterator[Snapshot]):
    """The snapshots of one list for ``async for`` (what ``AsyncClient.stream`` returns).

    The list starts at the first ``__anext__``. ``async for`` gets an iterator that only the loop
    holds: leaving the loop releases it, and that stops the list at once, even while this object
    stays referenced (an async generator would stop only when the event loop finalizes it).
    ``stop_reason``, ``resume_token`` and ``sync_state`` are as on :class:`sheaf.SnapshotStream`.
    """

    def __init__(self, run: ListRun) -> None:
        self._run: Optional[ListRun] = run
        self._last_run = run   # kept after close: its sync state is read there (no handle needed)
        self._wakeups: Optional[_Wakeups] = None
        self._resume = run.current_resume_token()
        self._stop_reason = StopReason.NONE

    def __aiter__(self) -> "_UntilReleased":
        return _UntilReleased(self)

    async def __anext__(self) -> Snapshot:
        run = self._run
        if run is None:
            raise StopAsyncIteration
        try:
            if self._wakeups is None:
                self._wakeups = _Wakeups(asyncio.get_running_loop())
                run.start(notify_fd=self._wakeups.write_fd)
            snapshot = await _taken(run, self._wakeups)
            if snapshot is not None:
                taken = run.snapshot_of(snapshot)
                self._resume = taken.resume_token
                return taken
            self._resume, self._stop_reason = run.resume_token, run.stop_reason
            run.raise_outcome([])
        except BaseException:
            self.close()   # a failure, or the task cancelled: the list ends here
            raise
        self.close()
        raise StopAsyncIteration

    @property
    def resume_token(self) -> Optional[str]:
        """The token that goes on after the snapshots taken so far; None once the list completed."""
        return self._resume

    @property
    def sync_state(self) -> Optional[Dict[str, Any]]:
        """For a list that syncs (``until=`` or ``since=``), what to store for the next run,
        through the snapshots taken so far; None otherwise."""
        return self._last_run.current_sync_state()

    @property
    def stop_reason(self) -> StopReason:
        """Why the list ended (``COMPLETE``, ``ITEM_LIMIT``, ``PAGE_BUDGET``, ``REQUEST_BUDGET``);
        ``NONE`` before its end, and when it was left early."""
        return self._stop_reason

    def close(self) -> None:
        """Stops the list if it runs and frees it. Idempotent; callable from the loop's thread."""
        run, self._run = self._run, None
        if run is not None:
            run.close()
        wakeups, self._wakeups = self._wakeups, None
        if wakeups is not None:
            wakeups.close()

    async def aclose(self) -> None:
        """:meth:`close`, awaitable (as an async generator's)."""
        self.close()


class _UntilReleased(AsyncIterator[Snapshot]):
    """The iterator ``async for`` holds: releasing it (leaving the loop) closes the stream."""

    def __init__(self, stream: AsyncSnapshotStream) -> None:
        self._stream = stream

    def __aiter__(self) -> "_UntilReleased":
        return self

    async def __anext__(self) -> Snapshot:
        return await self._stream.__anext__()

    def __del__(self) -> None:
        self._stream.close()


async def _taken_delta(group: GroupRun, wakeups: _Wakeups) -> Optional[GroupDelta]:
    """The group's next delta (None at the end), waiting on the loop, never in the library."""
    while True:   # bounded by the group: each wake-up brings a delta, the end, or nothing new
        taken = group.take(0)
        if taken is not PENDING:
            return taken
        await wakeups.wait()


class AsyncGroupStream(AsyncIterator[GroupDelta], Closing):
    """The deltas of a group for ``async for`` (what ``AsyncClient.stream_many`` and
    ``stream_each`` return): as :class:`sheaf.GroupStream`, awaited. The group starts at the
    first ``__anext__``; leaving the loop (even with this object still referenced), ``aclose()``,
    ``with`` or cancelling the task stops every list, and a stream dropped unread frees its
    group. ``result`` is as on :class:`sheaf.GroupStream`.
    """

    def __init__(self, group: GroupRun, check: bool = True) -> None:
        self._group: Optional[GroupRun] = group
        self._check = check
        self._wakeups: Optional[_Wakeups] = None
        self._ended: Dict[int, Optional[Tuple[Error, Optional[str]]]] = {}
        self._result: Optional[GroupResult] = None

    def __aiter__(self) -> "_GroupUntilReleased":
        return _GroupUntilReleased(self)

    async def __anext__(self) -> GroupDelta:
        group = self._group
        if group is None:
            raise StopAsyncIteration
        try:
            if self._wakeups is None:
                self._wakeups = _Wakeups(asyncio.get_running_loop())
                group.start(notify_fd=self._wakeups.write_fd)
            delta = await _taken_delta(group, self._wakeups)
            if delta is not None:
                if delta.finished:
                    self._ended[delta.index] = None if delta.error is None else (delta.error, delta.resume_token)
                return delta
            self._result = GroupResult(group.outcomes({}, self._ended), group.group_error())
        except BaseException:
            self.close()   # a failure, or the task cancelled: the group ends here
            raise
        self.close()
        if self._check:
            raise_for(self._result)
        raise StopAsyncIteration

    @property
    def result(self) -> Optional[GroupResult]:
        """Every list's outcome (no items) once the group has ended; None before."""
        return self._result

    def close(self) -> None:
        """Stops the group if it runs and frees it. Idempotent; callable from the loop's thread."""
        group, self._group = self._group, None
        if group is not None:
            group.close()
        wakeups, self._wakeups = self._wakeups, None
        if wakeups is not None:
            wakeups.close()

    async def aclose(self) -> None:
        """:meth:`close`, awaitable (as an async generator's)."""
        self.close()


class _GroupUntilReleased(AsyncIterator[GroupDelta]):
    """The iterator ``async for`` holds: releasing it (leaving the loop) closes the stream."""

    def __init__(self, stream: AsyncGroupStream) -> None:
        self._stream = stream

    def __aiter__(self) -> "_GroupUntilReleased":
        return self

    async def __anext__(self) -> GroupDelta:
        return await self._stream.__anext__()

    def __del__(self) -> None:
        self._stream.close()


class AsyncClient:
    """:class:`sheaf.Client` for asyncio: the same arguments and options, its calls awaited.

    Use it as ``async with`` or call :meth:`aclose`. A list or request awaited from several tasks
    at once runs concurrently, as it does from several threads on the blocking client.
    """

    def __init__(self, base_url: str, token: Optional[str] = None, **options: Any) -> None:
        self.sync = Client(base_url, token, **options)
        self.base_url = base_url

    # ---- lifetime ---------------------------------------------------------------------------

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Frees the client (lists and requests already running keep what they need)."""
        self.sync.close()

    # ---- lists ------------------------------------------------------------------------------

    async def fetch_all(self, path: str, description: Optional[Description] = None, *, decode: Any = None,
                        options: Optional[ListOptions] = None, **keywords: Any) -> Items:
        """:meth:`sheaf.Client.fetch_all`, awaited: every item, decoded as the pages arrive."""
        return await self._fetch(self._new_run(Client.fetch_all, path, description, decode, options, keywords))

    async def _fetch(self, run: ListRun) -> Items:
        """Runs `run` to its end, taking its items (fetch_all's loop)."""
        loop = asyncio.get_running_loop()
        wakeups = _Wakeups(loop)
        delivered: List[Any] = []
        try:
            run.start(notify_fd=wakeups.write_fd)
            while (snapshot := await _taken(run, wakeups)) is not None:
                delivered.extend(run.items_of(snapshot))
        except ItemDecodeError as error:
            error.items = delivered + error.items
            raise
        finally:
            run.close()   # also when the task is cancelled: stops the list
            wakeups.close()
        return run.items(delivered)

    def stream(self, path: str, description: Optional[Description] = None, *, decode: Any = None,
               options: Optional[ListOptions] = None, **keywords: Any) -> "AsyncSnapshotStream":
        """:meth:`sheaf.Client.stream` as an async iterator of :class:`Snapshot`; at the end, the
        list's failure is raised. Leaving ``async for`` (a ``break``, even with the stream still
        referenced), ``aclose()``, or cancelling the task stops the list."""
        return AsyncSnapshotStream(self._new_run(Client.stream, path, description, decode, options, keywords))

    def watch(self, path: str, description: Optional[Description] = None, **keywords: Any) -> Watch:
        """:meth:`sheaf.Client.watch`: a :class:`sheaf.Watch` to take with ``async for`` (each poll
        on a worker thread, the waits on the loop). Nothing is sent until it is iterated."""
        return self.sync.watch(path, description, **keywords)

    async def partitions(self, path: str, n: int, description: Optional[Description] = None, *,
                         options: Optional[ListOptions] = None, **keywords: Any) -> List[Partition]:
        """:meth:`sheaf.Client.partitions`, awaited (page one is read on a worker thread)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(self.sync.partitions, path, n, description,
                                                                  options=options, **keywords))

    async def fetch_partition(self, partition: Union[Partition, str], *, decode: Any = None,
                              options: Optional[ListOptions] = None, **keywords: Any) -> Items:
        """:meth:`sheaf.Client.fetch_partition`, awaited."""
        return await self._fetch(self._partition_run(Client.fetch_partition, partition, decode, options, keywords))

    def stream_partition(self, partition: Union[Partition, str], *, decode: Any = None,
                         options: Optional[ListOptions] = None, **keywords: Any) -> "AsyncSnapshotStream":
        """:meth:`sheaf.Client.stream_partition` as an async iterator of :class:`Snapshot`."""
        return AsyncSnapshotStream(self._partition_run(Client.stream_partition, partition, decode, options, keywords))

    # ---- groups -----------------------------------------------------------------------------

    async def fetch_many(self, paths: Sequence[Union[str, ListOutcome]], description: Optional[Description] = None,
                         *, check: bool = True, options: Optional[ListOptions] = None,
                         **keywords: Any) -> GroupResult:
        """:meth:`sheaf.Client.fetch_many`, awaited."""
        return await self._fetch_group(self.stream_many(paths, description, check=False, options=options, **keywords),
                                       check)

    async def fetch_each(self, parent_path: str, templates: Union[str, Sequence[str]],
                         description: Optional[Description] = None, *, check: bool = True,
                         options: Optional[ListOptions] = None, **keywords: Any) -> GroupResult:
        """:meth:`sheaf.Client.fetch_each`, awaited."""
        return await self._fetch_group(self.stream_each(parent_path, templates, description, check=False,
                                                        options=options, **keywords), check)

    def stream_many(self, paths: Sequence[Union[str, ListOutcome]], description: Optional[Description] = None, *,
                    check: bool = True, options: Optional[ListOptions] = None, **keywords: Any) -> AsyncGroupStream:
        """:meth:`sheaf.Client.stream_many` as an async iterator of :class:`sheaf.GroupDelta`."""
        return AsyncGroupStream(self.sync._many_run_of(paths, description, options, keywords), check)

    def stream_each(self, parent_path: str, templates: Union[str, Sequence[str]],
                    description: Optional[Description] = None, *, check: bool = True,
                    options: Optional[ListOptions] = None, **keywords: Any) -> AsyncGroupStream:
        """:meth:`sheaf.Client.stream_each` as an async iterator of :class:`sheaf.GroupDelta`."""
        return AsyncGroupStream(self.sync._each_run_of(parent_path, templates, description, options, keywords), check)

    @staticmethod
    async def _fetch_group(stream: AsyncGroupStream, check: bool) -> GroupResult:
        """Runs a group to its end, keeping each list's items (fetch_many's loop)."""
        items: Dict[int, List[Any]] = {}
        try:
            async for delta in stream:
                items.setdefault(delta.index, []).extend(delta.items)
        finally:
            stream.close()   # also when the task is cancelled: stops every list
        result = stream.result
        assert result is not None
        for outcome in result:
            outcome.items = items.get(outcome.index, [])
            if outcome.error is not None:
                outcome.error.items = outcome.items
        if check:
            raise_for(result)
        return result

    def _partition_run(self, call: Any, partition: Union[Partition, str], decode: Any, options: Optional[ListOptions],
                       keywords: Dict[str, Any]) -> ListRun:
        """The sync client's run of `partition`, its settings resolved as `call` (a Client list
        method) resolves them."""
        settings = call._takes.resolve(options, keywords)
        if keywords:
            raise UsageError(Result.INVALID_ARGUMENT, f"fetch_partition takes no {', '.join(sorted(keywords))}")
        return self.sync._partition_run(partition, settings, decode)

    def _new_run(self, call: Any, path: str, description: Optional[Description], decode: Any,
                 options: Optional[ListOptions], keywords: Dict[str, Any]) -> ListRun:
        """The sync client's run of the list at `path`, its settings resolved as `call` (a Client
        list method) resolves them; the keywords left are the description's parts."""
        settings = call._takes.resolve(options, keywords)
        return self.sync._new_run(path, description, keywords, settings, decode=decode)

    # ---- single requests --------------------------------------------------------------------

    async def request(self, method: str, path: Union[str, Sequence[Any]] = "", *, params: Optional[Query] = None,
                      headers: Optional[Headers] = None, json: Any = None, data: Any = None,
                      content: Optional[bytes] = None, content_type: Optional[str] = None, retry: bool = False,
                      check: bool = True) -> Response:
        """:meth:`sheaf.Client.request`, awaited."""
        return await self._send(method, path, params=params, headers=headers, json=json, data=data, content=content,
                                content_type=content_type, retry=retry, check=check)

    async def download(self, path: Union[str, Sequence[Any]], destination: Union[str, "os.PathLike[str]"], *,
                       params: Optional[Query] = None, headers: Optional[Headers] = None) -> Response:
        """:meth:`sheaf.Client.download`, awaited (no progress callback: await it in a task and
        look at the file)."""
        return await self._send("GET", path, params=params, headers=headers, json=None, data=None, content=None,
                                content_type=None, retry=False, check=True, output=destination)

    async def get(self, path: Union[str, Sequence[Any]] = "", **options: Any) -> Response:
        """:meth:`request` with GET, awaited."""
        return await self.request("GET", path, **options)

    async def head(self, path: Union[str, Sequence[Any]] = "", **options: Any) -> Response:
        """:meth:`request` with HEAD, awaited."""
        return await self.request("HEAD", path, **options)

    async def post(self, path: Union[str, Sequence[Any]] = "", **options: Any) -> Response:
        """:meth:`request` with POST, awaited."""
        return await self.request("POST", path, **options)

    async def put(self, path: Union[str, Sequence[Any]] = "", **options: Any) -> Response:
        """:meth:`request` with PUT, awaited."""
        return await self.request("PUT", path, **options)

    async def patch(self, path: Union[str, Sequence[Any]] = "", **options: Any) -> Response:
        """:meth:`request` with PATCH, awaited."""
        return await self.request("PATCH", path, **options)

    async def delete(self, path: Union[str, Sequence[Any]] = "", **options: Any) -> Response:
        """:meth:`request` with DELETE, awaited."""
        return await self.request("DELETE", path, **options)

    async def _send(self, method: str, path: Union[str, Sequence[Any]], *, params: Optional[Query],
                    check: bool, **request: Any) -> Response:
        client = self.sync._handle
        if client is None:
            raise UsageError(Result.STATE, "the client is closed")
        loop = asyncio.get_running_loop()
        handle = prepare(client, method, path, query=_query_pairs(params), **request)
        finished: asyncio.Future = loop.create_future()

        def settle(result: int) -> None:
            if not finished.done():
                finished.set_result(result)

        # On the library's thread, once: hands the outcome to the loop.
        callback = _ffi.REQUEST_DONE_FN(lambda _request, result, _user: loop.call_soon_threadsafe(settle, result))
        try:
            lib.sheaf_request_start(handle, callback, None, None)
            try:
                await finished
            except asyncio.CancelledError:
                lib.sheaf_request_cancel(handle)
                raise
            # The callback has handed over its result; this returns once it has returned.
            return outcome(handle, lib.sheaf_request_wait(handle), check)
        finally:
            lib.sheaf_request_free(handle)   # no callback after this: `callback` may go


__all__ = ["AsyncClient", "AsyncGroupStream"]
