#!/usr/bin/env python3
"""A TCP proxy that adds a fixed delay each way, so that a loopback server seems far away.

Every chunk of bytes read from one side is written to the other side `delay` after it was read,
in the order it was read. A round trip through the proxy (a request and its answer, a TLS
handshake's flight and its reply) so costs twice the delay. An end of stream is passed on after
the delay too; a connection the upstream refuses is closed at once.

What it does not model: the TCP handshake (connect() to the proxy is answered locally, so a new
connection costs no round trip before its first byte), bandwidth, loss, and TCP's congestion
window. Only latency. The benchmark uses it where the kernel has no netem (bench/run.py, P10).

usage: delay_proxy.py --upstream HOST:PORT --delay-ms D [--port P]
       (prints the port, then serves on 127.0.0.1 until killed or until stdin closes)
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import threading
from typing import Optional, Set, Tuple

CHUNK = 65536
QUEUED_CHUNKS = 256     # chunks read and not yet written, per direction: the reader waits past this


class DelayProxy:
    """The proxy on a thread of its own: `port`, `connections` (accepted so far), `close()`."""

    def __init__(self, upstream: Tuple[str, int], delay_ms: float, port: int = 0) -> None:
        self.upstream = upstream
        self.delay = delay_ms / 1000.0
        self.connections = 0
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        self.port = listener.getsockname()[1]
        self._loop = asyncio.new_event_loop()
        self._stop: Optional[asyncio.Event] = None
        self._pipes: Set[asyncio.Future] = set()     # every connection's two pipes
        self._open: Set[asyncio.Task] = set()        # the connections' own tasks
        started = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(listener, started), daemon=True)
        self._thread.start()
        started.wait(10)

    def _run(self, listener: socket.socket, started: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._stop = asyncio.Event()
        self._loop.call_soon(started.set)
        self._loop.run_until_complete(self._serve(listener))

    async def _serve(self, listener: socket.socket) -> None:
        server = await asyncio.start_server(self._accepted, sock=listener)
        async with server:
            await self._stop.wait()
        # The pipes, not the connections' own tasks: asyncio reads those tasks' outcome, and a
        # cancelled one is logged as an error.
        for pipe in list(self._pipes):
            pipe.cancel()
        if self._open:
            await asyncio.wait(self._open, timeout=5)

    async def _accepted(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        self._open.add(task)
        task.add_done_callback(self._open.discard)
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            client_writer.close()
            return
        # Nagle off both ways, as on the server's own sockets: asyncio sets TCP_NODELAY only on
        # sockets made with IPPROTO_TCP, and an accepted one inherits the listener's 0. With
        # Nagle, the small writes of many HTTP/2 streams on one connection waited for delayed ACKs.
        for writer in (client_writer, upstream_writer):
            writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pipes = [asyncio.ensure_future(self._pipe(client_reader, upstream_writer)),
                 asyncio.ensure_future(self._pipe(upstream_reader, client_writer))]
        self._pipes.update(pipes)
        try:
            await asyncio.gather(*pipes)
        except (OSError, asyncio.CancelledError):
            pass    # one side reset, or the proxy closes: both go
        finally:
            for pipe in pipes:
                pipe.cancel()
                self._pipes.discard(pipe)
            await asyncio.gather(*pipes, return_exceptions=True)
            for writer in (client_writer, upstream_writer):
                writer.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Copies `reader` to `writer`, each chunk written `delay` after it was read; then the
        end of stream, as late."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue(QUEUED_CHUNKS)

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(data)
                await writer.drain()

        delivering = asyncio.ensure_future(deliver())
        try:
            while True:     # ends with the stream: read() returns b"" at its end
                data = await reader.read(CHUNK)
                await queue.put((loop.time() + self.delay, data))
                if not data:
                    break
            await delivering
        finally:
            delivering.cancel()

    def close(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", required=True, help="HOST:PORT to forward to")
    parser.add_argument("--delay-ms", type=float, required=True, help="the delay each way, in milliseconds")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    host, _, port = args.upstream.rpartition(":")
    proxy = DelayProxy((host, int(port)), args.delay_ms, args.port)
    print(proxy.port, flush=True)
    try:
        sys.stdin.read()    # until stdin closes (or the process is killed)
    except KeyboardInterrupt:
        pass
    proxy.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
