#!/usr/bin/env python3
"""Sheaf's benchmarks: the scenarios of BENCHMARKS.md (P1-P7 and the memory figures), one table.

    python3 bench/run.py [--runs 5] [--only P1,P5] [--quick] [--results FILE] [--charts DIR]

Starts its own loopback API server (Tests/server/api_server.py as a child process, with
--cache-pages, so the Python server is less of a bottleneck at zero latency), runs every
measured run in a fresh process (bench/sheaf_bench for C, bench/py_driver.py for Python) so the
peak RSS of each run is its own, and prints one table: Sheaf's median, the floor or the baseline,
their ratio, the target, whether it is met, the requests the server saw, the most requests it had
in flight at once, and the peak RSS. The run is also saved as JSON (the table's rows, the header
and every measured run: --results, by default under build/bench-results/), and --charts DIR draws
it as bar charts (bench/charts.py, with matplotlib). See bench/README.md.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import http.client
import json
import math
import os
import platform
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
SERVER_SCRIPT = ROOT / "Tests" / "server" / "api_server.py"
H2_SERVER_SCRIPT = ROOT / "Tests" / "server" / "h2_server.py"
DELAY_PROXY_SCRIPT = ROOT / "Tests" / "server" / "delay_proxy.py"
PY_DRIVER = ROOT / "bench" / "py_driver.py"
WATCH_ROWS = ROOT / "bench" / "watch_rows.py"

L_MS = 50                      # P1-P4, P6, P7: added latency per request
N_PAGES = 200                  # P1-P4: pages ...
PER_PAGE = 50                  # ... of 50 items
P5_PAGES, P5_PER_PAGE = 500, 1000
STREAM_PER_PAGE = 20           # the streaming-memory lists: small pages, many of them
SMALL_PAGES, SMALL_PER_PAGE = 2000, 5   # P7's per-snapshot cost with next to nothing to decode
BENCH_TOKEN = "bench-token"    # P1a: a bearer token the server ignores (a client that sends a credential)
RUN_TIMEOUT_S = 300            # one measured run
SLOW_RUNS = 3                  # runs of a 10 s scenario (serial walks) at most

ALL_IDS = ["P1", "P1A", "P1D", "P2", "P3", "P4", "P4C", "P5", "P5U", "P6", "P7", "P10", "P11", "P12", "P13", "F1",
           "M1", "M2", "M3", "R1", "R2", "R3", "Q3", "C1", "N1", "G1", "W1", "W2"]
Q3_PAGES, Q3_POINTS, Q3_WINDOW = 200, 120, 64   # Q3: a list larger than its token's quota (issue 44)
# R1-R3: cursor lists split by their range filter (issue 43), on Tests/server/ranges.py
R_PAGES, R_PER_PAGE, R_L_MS, R_CAPACITY = 1000, 100, 100, 64
R_SPAN = R_PAGES * R_PER_PAGE * 10      # ten seconds an item, on average
R3_PAGES = 200
N1_RESULTS, N1_PAGE, N1_L_MS = 5000, 100, 50   # N1: a Notion-shaped POST query (issue 45)
G1_ISSUES, G1_PAGE, G1_L_MS, G1_WINDOW = 2000, 100, 50, 64   # G1: GraphQL with nested comments (issue 45)
W1_RATE, W1_SECONDS, W1_EVERY = 10, 20, 1   # W1: sheaf watch while items are added (issue 46)
W2_POLLS = 720                             # W2: an idle hour's polls at --every 5, back to back
P13_PAGES, P13_FAILING = 20, 10        # P13: a 20-page list whose page 10 answers 404
P10_MAX_CONNECTIONS = 6                # P10: a server taking this many connections per client
P10_ONE_WAY_MS = 20                    # P10: the delay each way of the round-trip rows
NETNS_HOST, NETNS_SERVER = "10.213.57.1", "10.213.57.2"   # P10 with netem: the veth pair's /30


# ---- the server ----------------------------------------------------------------------------------

class Server:
    """Tests/server/api_server.py in a child process: keep-alive, Nagle off, --cache-pages."""

    def __init__(self) -> None:
        self.proc: Optional[subprocess.Popen] = None
        self.port = 0

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER_SCRIPT), "--port", "0", "--quiet", "--cache-pages",
             "--exit-on-stdin-eof"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        deadline = time.monotonic() + 20
        line = b""
        while time.monotonic() < deadline and not line.endswith(b"\n"):   # bounded by the deadline
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 256)
                if not chunk:
                    break
                line += chunk
        if not line.startswith(b"PORT "):
            self.stop()
            raise RuntimeError(f"the API server did not start (said {line!r})")
        self.port = int(line.split()[1])

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def get(self, path: str) -> dict:
        conn = self.connection()
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            body = r.read()
            if r.status != 200:
                raise RuntimeError(f"{path}: HTTP {r.status}")
            return json.loads(body)
        finally:
            conn.close()

    def __enter__(self) -> "Server":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_: Any) -> None:
        self.stop()

    def reset(self) -> None:
        """Waits (at most 5 s) for requests of an earlier run still being served -- a client that
        cancelled requests, e.g. speculative pages past a list's end, leaves them sleeping out their
        latency -- then restarts the counters, so no run is charged with another's requests."""
        deadline = time.monotonic() + 5.0
        while self.stats()["in_flight"] > 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.get("/_reset")

    def stats(self) -> dict:
        s = self.get("/_stats")
        return {"requests": s["requests"], "max_in_flight": s["max_in_flight"], "in_flight": s["in_flight"],
                "refused": s.get("refused", 0)}

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()               # --exit-on-stdin-eof
        except OSError:
            pass
        end_process(proc)
        proc.stdout.close()


def end_process(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after 5 s; waits for it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


class H2Server(Server):
    """Tests/server/h2_server.py (hypercorn: HTTP/2 over TLS by ALPN, HTTP/1.1 to clients that ask
    for it) in a child process, with a certificate from a CA made for the run (`ca`).

    `max_connections`: its connection limit (503 past it). `host` and `prefix`: the address it
    listens on and a command it runs under (`ip netns exec NS`). `front_port`: set when clients
    reach it through a proxy on that port; the counters are read from the server itself."""

    def __init__(self, max_connections: Optional[int] = None, host: str = "127.0.0.1",
                 prefix: Sequence[str] = ()) -> None:
        super().__init__()
        self.folder = tempfile.mkdtemp(prefix="sheaf-bench-pki-")
        self.ca = os.path.join(self.folder, "ca.pem")
        self.max_connections = max_connections
        self.host = host
        self.prefix = list(prefix)
        self.front_port = 0

    def start(self) -> None:
        def openssl(*arguments: str) -> None:
            subprocess.run(["openssl", *arguments], cwd=self.folder, check=True, capture_output=True, timeout=60)
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
                "-days", "2", "-subj", "/CN=Sheaf Bench CA")
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
                "-subj", f"/CN={self.host}")
        Path(self.folder, "server.ext").write_text(f"subjectAltName=IP:{self.host}\n")
        openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", "server.pem", "-days", "2", "-extfile", "server.ext")
        limit = ["--max-connections", str(self.max_connections)] if self.max_connections else []
        self.proc = subprocess.Popen(
            [*self.prefix, sys.executable, str(H2_SERVER_SCRIPT), "--cert", os.path.join(self.folder, "server.pem"),
             "--key", os.path.join(self.folder, "server.key"), "--host", self.host, *limit],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.port = read_port(self, "the HTTP/2 server")

    @property
    def base(self) -> str:
        if self.front_port:
            return f"https://127.0.0.1:{self.front_port}"
        return f"https://{self.host}:{self.port}"

    def connection(self) -> http.client.HTTPConnection:
        import ssl
        return http.client.HTTPSConnection(self.host, self.port, timeout=30,
                                           context=ssl.create_default_context(cafile=self.ca))

    def stats(self) -> dict:
        s = self.get("/_stats")
        return {"requests": s["requests"], "max_in_flight": s["max_in_flight"], "in_flight": s["in_flight"],
                "refused": s.get("refused", 0), "connections": s["connections"]}

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            end_process(proc)
        shutil.rmtree(self.folder, ignore_errors=True)


class UvicornServer(Server):
    """Tests/server/h2_server.py --uvicorn --cache-pages in a child process: the lists served by
    uvicorn over cleartext HTTP/1.1, a plain Python ASGI server (each page built once, then served
    from memory): the server of the P5U rows, sharing the machine's cores with the client."""

    def start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, str(H2_SERVER_SCRIPT), "--uvicorn", "--cache-pages"], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.port = read_port(self, "the uvicorn server")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            end_process(proc)


def read_port(server, what: str) -> int:
    """The port a child server prints on its first line (within 20 s); stops it otherwise."""
    ready, _, _ = select.select([server.proc.stdout], [], [], 20)
    line = server.proc.stdout.readline() if ready else b""
    if not line.strip().isdigit():
        error = server.proc.stderr.read() if server.proc.stderr and server.proc.poll() is not None else b""
        server.stop()
        raise RuntimeError(f"{what} did not start: {(line + error).decode(errors='replace')[-300:]}")
    return int(line)


class DelayProxy:
    """Tests/server/delay_proxy.py in a child process: a port on loopback that forwards to a
    server's, each chunk of bytes `delay_ms` late each way."""

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self.proc: Optional[subprocess.Popen] = None
        self.port = 0

    def start(self, upstream_port: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(DELAY_PROXY_SCRIPT), "--upstream", f"127.0.0.1:{upstream_port}",
             "--delay-ms", str(self.delay_ms)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        self.port = read_port(self, "the delay proxy")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()      # it exits when its stdin closes
        except OSError:
            pass
        end_process(proc)


class NetemPath:
    """A network namespace joined to this one by a veth pair, every packet delayed `delay_ms` on
    its way out of either end (netem): a server run under `prefix` listens inside, at `address`.
    Made and removed by the benchmark; it needs root, `ip`, `tc` and a kernel with netem."""

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        tag = str(os.getpid())
        self.namespace = f"sheaf-bench-{tag}"
        self.outside, self.inside = f"shb{tag}a", f"shb{tag}b"     # interface names: 15 characters at most
        self.prefix = ["ip", "netns", "exec", self.namespace]
        self.address = NETNS_SERVER

    def unavailable(self) -> Optional[str]:
        """Why netem cannot be used here, or None (then `create` may still fail: it says why)."""
        if os.geteuid() != 0:
            return "not root"
        missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
        if missing:
            return f"no {' or '.join(missing)} command"
        try:
            import gzip
            with gzip.open("/proc/config.gz", "rt") as config:
                if "# CONFIG_NET_SCH_NETEM is not set" in config.read():
                    return "the kernel has no netem: CONFIG_NET_SCH_NETEM is not set"
        except OSError:
            pass        # no config to read: try
        return None

    def create(self) -> Optional[str]:
        """Makes the namespace and the delayed link: None, or what failed (then nothing is left)."""
        delay = ["netem", "delay", f"{self.delay_ms}ms"]
        steps = [["ip", "netns", "add", self.namespace],
                 ["ip", "link", "add", self.outside, "type", "veth", "peer", "name", self.inside],
                 ["ip", "link", "set", self.inside, "netns", self.namespace],
                 ["ip", "addr", "add", f"{NETNS_HOST}/30", "dev", self.outside],
                 ["ip", "link", "set", self.outside, "up"],
                 [*self.prefix, "ip", "addr", "add", f"{NETNS_SERVER}/30", "dev", self.inside],
                 [*self.prefix, "ip", "link", "set", self.inside, "up"],
                 [*self.prefix, "ip", "link", "set", "lo", "up"],
                 ["tc", "qdisc", "add", "dev", self.outside, "root", *delay],
                 [*self.prefix, "tc", "qdisc", "add", "dev", self.inside, "root", *delay]]
        for step in steps:
            done = subprocess.run(step, capture_output=True, timeout=30)
            if done.returncode != 0:
                self.remove()
                return f"`{' '.join(step)}` failed: {done.stderr.decode(errors='replace').strip()[-200:]}"
        return None

    def remove(self) -> None:
        """Deleting one end of a veth pair deletes both; the namespace goes after it."""
        subprocess.run(["ip", "link", "del", self.outside], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", self.namespace], capture_output=True, timeout=30)


# ---- measured runs -------------------------------------------------------------------------------

class RunFailed(Exception):
    pass


@dataclass
class Spec:
    """One measurement: a command run `runs` times (after `warmup` unmeasured runs)."""
    key: str
    argv: List[str]
    runs: int
    warmup: int = 0
    env: Optional[Dict[str, str]] = None
    timeout: float = RUN_TIMEOUT_S
    server: Optional["Server"] = None        # another than the bench's API server (HTTP/2)
    timeline: bool = False                   # keep the server's /_timeline of each run


@dataclass
class Measured:
    runs: List[dict] = field(default_factory=list)      # the correct runs, measured
    wrong: List[str] = field(default_factory=list)      # why other runs (warm-ups included) failed
    error: Optional[str] = None                         # set when no run was correct

    @property
    def runs_text(self) -> str:
        return f"{len(self.runs)}" + (f" (+{len(self.wrong)} wrong)" if self.wrong else "")

    def median(self, name: str = "seconds") -> float:
        return statistics.median(r[name] for r in self.runs)

    def values(self, name: str) -> List:
        return [r[name] for r in self.runs if name in r]

    def span(self, name: str) -> str:
        v = self.values(name)
        if not v:
            return "-"
        lo, hi = min(v), max(v)
        return f"{lo}" if lo == hi else f"{lo}-{hi}"

    def rss_mb(self) -> float:
        return max(self.values("peak_rss_kb")) * 1024 / 1e6    # VmHWM is in KiB; MB = 10^6 bytes


class Bench:
    def __init__(self, args) -> None:
        self.args = args
        self.server = Server()
        self.results: Dict[str, Measured] = {}
        self.child: Optional[subprocess.Popen] = None
        self.driver = args.driver or str(Path(args.build_dir) / "bench" / "sheaf_bench")
        self.built_library = str(Path(args.build_dir) / "lib" / "libsheaf.so.1")
        self.library_dir = ""
        self.lib_version = "libsheaf ?"
        self.python_ok: Optional[str] = None     # None: importable; else why not
        self.notes: List[str] = []
        self.over_window = False

    def snapshot_library(self) -> None:
        """Every run loads one copy of the library, taken at the start, so a rebuild of the tree
        during the benchmark cannot mix two versions in one table. The C driver's RUNPATH yields
        to LD_LIBRARY_PATH; the Python package reads SHEAF_LIBRARY_PATH."""
        self.library_dir = tempfile.mkdtemp(prefix="sheaf-bench-")
        self.library = os.path.join(self.library_dir, "libsheaf.so.1")
        shutil.copy2(os.path.realpath(self.built_library), self.library)
        with open(self.library, "rb") as f:
            self.library_sha = hashlib.sha256(f.read()).hexdigest()[:12]
        self.library_mtime = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(self.library)))
        ld_path = self.library_dir + (os.pathsep + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else "")
        self.c_env = dict(os.environ, LD_LIBRARY_PATH=ld_path)
        self.py_env = dict(os.environ, SHEAF_LIBRARY_PATH=self.library,
                           PYTHONPATH=str(ROOT / "bindings" / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))

    # -- children --

    def run_child(self, spec: Spec) -> dict:
        self.child = subprocess.Popen(spec.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      env=spec.env, start_new_session=True)
        try:
            out, err = self.child.communicate(timeout=spec.timeout)
        except subprocess.TimeoutExpired:
            self.kill_child()
            self.child = None
            raise RunFailed(f"timed out after {spec.timeout:.0f} s") from None
        except BaseException:            # Ctrl-C: the child goes too (it has a session of its own)
            self.kill_child()
            self.child = None
            raise
        code = self.child.returncode
        self.child = None
        if code != 0:
            raise RunFailed(f"exit {code}: {err.decode(errors='replace').strip()[-400:]}")
        try:
            result = json.loads(out.decode().strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise RunFailed(f"no JSON on stdout: {out[-200:]!r}") from None
        loaded = result.get("library")
        if loaded is not None and os.path.realpath(loaded) != os.path.realpath(self.library):
            raise RunFailed(f"the run loaded {loaded}, not the benchmark's copy {self.library}")
        return result

    def kill_child(self) -> None:
        child = self.child
        if child is not None and child.poll() is None:
            try:
                os.killpg(child.pid, signal.SIGKILL)   # its own session: the child and nothing else
            except (ProcessLookupError, PermissionError):
                pass
            child.wait(timeout=10)

    def measure(self, *specs: Spec) -> None:
        """Runs the specs not measured yet, interleaved run by run (A B C A B C ...), so a drift
        of the machine's load hits each of them alike. Server counters are reset before each.

        A run whose list is wrong (the driver exits non-zero) gives no time: it is counted in
        Measured.wrong and another run is made, up to `runs` more attempts in all."""
        todo = [s for s in specs if s.key not in self.results]
        for s in todo:
            self.results[s.key] = Measured()
        for s in todo:
            for _ in range(s.warmup):
                try:
                    (s.server or self.server).reset()
                    self.run_child(s)
                except RunFailed as e:
                    self.results[s.key].wrong.append(f"warm-up: {e}")
                    self.progress(f"{s.key} warm-up WRONG: {e}")
        attempts = {s.key: 0 for s in todo}
        while True:                       # bounded: each spec has at most 2 x runs attempts
            pending = [s for s in todo if len(self.results[s.key].runs) < s.runs and attempts[s.key] < 2 * s.runs]
            if not pending:
                break
            for s in pending:
                m = self.results[s.key]
                attempts[s.key] += 1
                server = s.server or self.server
                server.reset()
                try:
                    result = self.run_child(s)
                except RunFailed as e:
                    m.wrong.append(str(e))
                    self.progress(f"{s.key} attempt {attempts[s.key]}: WRONG: {e}")
                    continue
                stats = server.stats()
                if s.timeline:
                    result["timeline"] = server.get("/_timeline")
                result["server_requests"] = stats["requests"]
                result["server_max_in_flight"] = stats["max_in_flight"]
                result["server_refused"] = stats["refused"]
                if "connections" in stats:   # the HTTP/2 server counts them
                    result["server_connections"] = stats["connections"]
                m.runs.append(result)
                self.progress(f"{s.key} run {len(m.runs)}/{s.runs}: {result.get('seconds', 0):.3f} s")
        for s in todo:
            m = self.results[s.key]
            if not m.runs:
                m.error = m.wrong[-1] if m.wrong else "no run"

    def progress(self, text: str) -> None:
        if not self.args.quiet:
            sys.stderr.write(f"  {text}\n")
            sys.stderr.flush()

    # -- argv builders --

    def c_spec(self, key: str, mode: str, lst: "ListDef", runs: int, *, window: int = 8, adaptive: bool = False,
               transport: str = "curl", keep: int = 0, warmup: int = 0, timeout: float = RUN_TIMEOUT_S,
               extra: Sequence[str] = (), server: Optional[Server] = None) -> Spec:
        argv = [self.driver, mode, "--base", (server or self.server).base, "--path", lst.path, "--expect", str(lst.n),
                "--window", str(window), "--adaptive", "1" if adaptive else "0",
                "--transport", transport, "--keep", str(keep),
                "--max-pages", str(max(lst.pages + 10, 10000))]
        if lst.addressing == "page":
            argv += ["--page-param", "page", "--first-page", "1", "--size-param", "per_page",
                     "--page-size", str(lst.per_page)]
        if not lst.total:
            argv += ["--total", ""]
        argv += list(extra)
        return Spec(key, argv, runs, warmup, env=self.c_env, timeout=timeout, server=server)

    def async_python(self) -> Optional[str]:
        """The python of build/bench-venv when it has httpx and aiohttp (the async baselines),
        else None (their rows say how to make it)."""
        python = Path(self.args.build_dir) / "bench-venv" / "bin" / "python"
        if not python.exists():
            return None
        found = subprocess.run([str(python), "-c", "import httpx, aiohttp"], capture_output=True)
        return str(python) if found.returncode == 0 else None

    def py_spec(self, key: str, mode: str, lst: "ListDef", runs: int, *, window: int = 8,
                transport: str = "curl", warmup: int = 0, extra: Sequence[str] = (),
                python: Optional[str] = None, timeline: bool = False, server: Optional[Server] = None) -> Spec:
        argv = [python or sys.executable, str(PY_DRIVER), mode, "--base", (server or self.server).base, "--path", lst.path,
                "--expect", str(lst.n), "--window", str(window), "--page-size", str(lst.per_page),
                "--addressing", lst.addressing, "--total", "1" if lst.total else "0",
                "--transport", transport, "--max-pages", str(max(lst.pages + 10, 10000)), *extra]
        return Spec(key, argv, runs, warmup, env=self.py_env, timeline=timeline, server=server)

    def floor_spec(self, key: str, lst: "ListDef", runs: int, reps: int, pages: int = 0, window: int = 8) -> Spec:
        pages = pages or lst.pages
        argv = [self.driver, "floor", "--base", self.server.base, "--path", lst.path,
                "--expect", str(min(lst.n, pages * lst.per_page)), "--pages", str(pages), "--page-param", "page", "--first-page", "1",
                "--size-param", "per_page", "--page-size", str(lst.per_page), "--reps", str(reps),
                "--window", str(window)]
        return Spec(key, argv, runs, env=self.c_env)

    def cleanup(self) -> None:
        if self.library_dir:
            shutil.rmtree(self.library_dir, ignore_errors=True)


@dataclass
class ListDef:
    path: str          # path and query, without page / per_page (Sheaf and the drivers add them)
    pages: int
    per_page: int
    addressing: str = "page"   # "page": page numbers; "next": next links only; "detect": nothing said
    total: bool = True

    @property
    def n(self) -> int:
        return self.pages * self.per_page


# ---- the table -----------------------------------------------------------------------------------

@dataclass
class Row:
    id: str
    scenario: str
    sheaf: str = "-"
    floor: str = "-"
    ratio: str = "-"
    target: str = "-"
    met: str = "-"
    runs: str = "-"
    requests: str = "-"
    in_flight: str = "-"
    rss: str = "-"


COLUMNS = [("id", "id"), ("scenario", "scenario"), ("sheaf", "Sheaf (median)"), ("floor", "floor / baseline"),
           ("ratio", "ratio"), ("target", "target"), ("met", "met?"), ("runs", "runs"),
           ("requests", "requests"), ("in_flight", "server max in flight"), ("rss", "peak RSS MB")]


def print_table(rows: List[Row]) -> None:
    cells = [[getattr(r, k) for k, _ in COLUMNS] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, (_, h) in enumerate(COLUMNS)]
    line = "| " + " | ".join(h.ljust(w) for (_, h), w in zip(COLUMNS, widths)) + " |"
    print(line)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for c in cells:
        print("| " + " | ".join(v.ljust(w) for v, w in zip(c, widths)) + " |")


def page_record(body: bytes) -> bytes:
    """A page as a pages file holds it (sheaf_bench --pages-file, bench/scan): its length in
    decimal, a newline, its bytes."""
    return b"%d\n" % len(body) + body


def scan_driver_sources() -> List[Path]:
    """scan_pages' sources: its main file and the library's scanner files it is built with."""
    read = ROOT / "Sources" / "Sheaf" / "Read"
    return [ROOT / "bench" / "scan" / "main.swift"] + [read / f"{f}.swift" for f in ("JSONScanner", "JSONPointer", "JSONSyntaxError")]


def build_scan_driver(name: str, build_dir: str) -> Tuple[Optional[str], Optional[str]]:
    """bench/scan's drivers, built into BUILD_DIR/bench when missing or older than their sources:
    scan_pages (the library's scanner source files with its release flags, by swiftc) and
    simdjson_pages (g++ and Debian's libsimdjson-dev). Returns (path, None) or (None, why not)."""
    out = Path(build_dir) / "bench" / name
    scan = ROOT / "bench" / "scan"
    if name == "scan_pages":
        sources = scan_driver_sources()
        compiler = shutil.which("swiftc")
        argv = [compiler or "swiftc", "-O", "-wmo", *map(str, sources), "-o", str(out)]
        missing = None if compiler else "swiftc is not on PATH"
    else:
        sources = [scan / "simdjson_pages.cpp"]
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "simdjson"], capture_output=True, text=True)
        compiler = shutil.which("g++")
        missing = ("simdjson is not installed (apt-get install libsimdjson-dev)" if flags.returncode != 0
                   else None if compiler else "g++ is not on PATH")
        argv = [compiler or "g++", "-O3", "-std=c++17", str(sources[0]), *flags.stdout.split(), "-o", str(out)]
    if missing:
        return None, missing
    if out.exists() and all(out.stat().st_mtime >= f.stat().st_mtime for f in sources):
        return str(out), None
    out.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return None, f"building {name} failed: {done.stderr.strip()[-300:]}"
    return str(out), None


def pyarrow_import_mb(env: Dict[str, str]) -> float:
    """Peak RSS in MB of an interpreter that has imported sheaf and pyarrow.json, and nothing else."""
    code = ("import re, sheaf, pyarrow.json; "
            "print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    return int(done.stdout.strip() or 0) * 1024 / 1e6


def decoder() -> str:
    """Which decoder the Python binding uses in the bench's children (orjson when installed)."""
    return "orjson" if importlib.util.find_spec("orjson") else "json: orjson is not installed"


def secs(x: float) -> str:
    return f"{x:.3f} s"


def yes(ok: bool) -> str:
    return "yes" if ok else "NO"


def fill_counts(row: Row, m: Measured) -> Row:
    row.runs = m.runs_text
    if m.wrong and row.met not in ("-", ""):
        row.met = f"NO ({len(m.wrong)} wrong)"
    row.requests = m.span("server_requests")
    row.in_flight = m.span("server_max_in_flight")
    row.rss = f"{m.rss_mb():.1f}" if any(m.values("peak_rss_kb")) else "-"   # the CLI row has none
    return row


def failed_row(id_: str, scenario: str, m: Measured, target: str = "-") -> Row:
    return Row(id_, scenario, sheaf=f"FAILED: {m.error}"[:120], target=target, met="NO")


# ---- scenarios -----------------------------------------------------------------------------------

class Scenarios:
    def __init__(self, bench: Bench, runs: int, quick: bool) -> None:
        self.b = bench
        self.runs = runs
        self.quick = quick
        self.slow_runs = 1 if quick else min(runs, SLOW_RUNS)
        q = f"latency_ms={L_MS}"
        serial_pages = 40 if quick else N_PAGES
        self.p1 = ListDef(f"/anchor?n={N_PAGES * PER_PAGE}&{q}", N_PAGES, PER_PAGE)
        self.p3 = ListDef(f"/anchor?n={N_PAGES * PER_PAGE}&{q}&nototal=1", N_PAGES, PER_PAGE, total=False)
        self.p4 = ListDef(f"/anchor?n={serial_pages * PER_PAGE}&{q}&nototal=1&per_page={PER_PAGE}",
                          serial_pages, PER_PAGE, addressing="next", total=False)
        self.p5 = ListDef(f"/anchor?n={P5_PAGES * P5_PER_PAGE}&cap={P5_PER_PAGE}", P5_PAGES, P5_PER_PAGE)
        self.small = ListDef(f"/anchor?n={SMALL_PAGES * SMALL_PER_PAGE}", SMALL_PAGES, SMALL_PER_PAGE)
        small_n, big_n = (500, 5000) if quick else (5000, 50000)
        self.stream_small = ListDef(f"/anchor?n={small_n * STREAM_PER_PAGE}", small_n, STREAM_PER_PAGE)
        self.stream_big = ListDef(f"/anchor?n={big_n * STREAM_PER_PAGE}", big_n, STREAM_PER_PAGE)
        self.python_rows = bench.python_ok is None

    def floor_window(self, window: int, lst: ListDef) -> float:
        """A list whose paging is found on page one: page one, then the rest W at a time."""
        return (1 + math.ceil((lst.pages - 1) / window)) * L_MS / 1000.0

    def floor_ahead(self, window: int, lst: ListDef) -> float:
        """A list whose pages are addressed before page one answers: W at a time from the start."""
        return math.ceil(lst.pages / window) * L_MS / 1000.0

    # Shared measurements (each runs once, whichever scenario asks first).
    def c_p1(self) -> Measured:
        self.b.measure(self.b.c_spec("C fetch P1", "fetch", self.p1, self.runs, warmup=1),
                       self.b.py_spec("threadpool P1 W=8", "threadpool", self.p1, self.runs),
                       *self.async_baselines("P1", self.p1))
        return self.b.results["C fetch P1"]

    ASYNC_BASELINES = (("httpx.AsyncClient, sliding window W=8", "httpx-window"),
                       ("aiohttp, sliding window W=8", "aiohttp-window"))

    def async_baselines(self, id_: str, lst: ListDef) -> List[Spec]:
        python = self.b.async_python()
        if python is None:
            return []
        return [self.b.py_spec(f"{mode} {id_} W=8", mode, lst, self.runs, python=python, warmup=1)
                for _, mode in self.ASYNC_BASELINES]

    def async_baseline_rows(self, id_: str, sheaf: Measured) -> List[Row]:
        if self.b.async_python() is None:
            return [Row(id_, f"  baseline: {label}", sheaf="not run: needs build/bench-venv with httpx and aiohttp "
                        "(python3 -m venv build/bench-venv && build/bench-venv/bin/pip install httpx aiohttp)")
                    for label, _ in self.ASYNC_BASELINES]
        return self.baseline_rows(id_, sheaf, [(label, f"{mode} {id_} W=8") for label, mode in self.ASYNC_BASELINES])

    def serial_baseline(self) -> Measured:
        self.b.measure(self.b.py_spec("requests serial P1", "requests-serial", self.p1, self.slow_runs))
        return self.b.results["requests serial P1"]

    def c_p5(self) -> Measured:
        b = self.b
        b.measure(b.floor_spec("floor P5", self.p5, self.runs, reps=3),
                  b.c_spec("C fetch P5", "fetch", self.p5, self.runs, warmup=1),
                  b.py_spec("requests serial P5", "requests-serial", self.p5, self.runs, warmup=1),
                  b.py_spec("threadpool P5 W=8", "threadpool", self.p5, self.runs, warmup=1),
                  *self.async_baselines("P5", self.p5))
        return b.results["C fetch P5"]

    def baseline_rows(self, id_: str, sheaf: Measured, baselines: List[tuple]) -> List[Row]:
        rows = []
        for label, key in baselines:
            m = self.b.results[key]
            if m.error or not m.runs:
                rows.append(failed_row(id_, f"  baseline: {label}", m))
                continue
            if sheaf.error or not sheaf.runs:
                rows.append(fill_counts(Row(id_, f"  baseline: {label}", floor=secs(m.median())), m))
                continue
            rows.append(fill_counts(Row(id_, f"  baseline: {label}", sheaf=secs(sheaf.median()),
                                        floor=secs(m.median()),
                                        ratio=f"{sheaf.median() / m.median():.2f}x",
                                        target="(Sheaf / baseline)"), m))
        return rows

    def window_row(self, id_: str, label: str, m: Measured, floor: float, limit: float, window: int) -> Row:
        """A windowed run: the ratio to the floor, and the server must have seen the whole window
        in flight in every run (it may count one more: see the note under the table)."""
        target = f"<= {limit:.2f}x floor; server saw {window}"
        if m.error or not m.runs:
            return failed_row(id_, label, m, target)
        ratio = m.median() / floor
        seen = m.values("server_max_in_flight")
        saw = min(seen) >= window
        if max(seen) > window:
            self.b.over_window = True
        row = fill_counts(Row(id_, label, sheaf=secs(m.median()), floor=secs(floor), ratio=f"{ratio:.2f}x",
                              target=target, met=yes(ratio <= limit and saw)), m)
        if m.values("transport_max_in_flight"):
            row.in_flight += f" (transport {m.span('transport_max_in_flight')})"
        return row

    # -- P1 --
    def P1(self) -> List[Row]:
        m = self.c_p1()
        self.serial_baseline()
        floor = self.floor_ahead(8, self.p1)
        rows = [self.window_row("P1", f"N={N_PAGES}x{PER_PAGE}, L={L_MS} ms, total, page parameter given, fixed W=8 (fetch_all, C)",
                                m, floor, 1.05, 8)]
        rows += self.baseline_rows("P1", m, [("requests, serial walk", "requests serial P1"),
                                             ("ThreadPoolExecutor W=8 + requests", "threadpool P1 W=8")])
        rows += self.async_baseline_rows("P1", m)
        return rows

    # -- P1d: the same list described by items / next / total / id only, or not at all --
    def P1D(self) -> List[Row]:
        b = self.b
        detect = ListDef(self.p1.path, N_PAGES, PER_PAGE, addressing="detect")
        seed = ["--detect", "1", "--items", "/items", "--next", "/next_page", "--total", "/total", "--identity", "/id"]
        specs = [b.c_spec("C fetch P1d described", "fetch", detect, self.runs, extra=seed),
                 b.c_spec("C fetch P1d undescribed", "fetch", detect, self.runs, extra=["--detect", "1"])]
        if self.python_rows:
            specs.append(b.py_spec("CLI P1d undescribed", "sheaf-cli", detect, self.slow_runs))
        b.measure(*specs)
        floor = self.floor_window(8, self.p1)
        rows = [self.window_row("P1d", "P1 described by items/next/total/id only (paging inferred), C", 
                                b.results["C fetch P1d described"], floor, 1.10, 8),
                self.window_row("P1d", "P1 not described at all (detected), C", b.results["C fetch P1d undescribed"],
                                floor, 1.10, 8)]
        if self.python_rows:
            m = b.results["CLI P1d undescribed"]
            label = "P1 with `sheaf get URL`, no flags (the CLI's start-up subtracted)"
            rows.append(self.window_row("P1d", label, m, floor, 1.10, 8))
            if m.runs:
                b.notes.append(f"P1d's CLI row: the whole command took {statistics.median(m.values('cli_seconds')):.3f} s, "
                               f"of which start-up (the same command on an empty list) "
                               f"{statistics.median(m.values('startup_seconds')):.3f} s")
        return rows

    # -- P11: other conventions, detected, at L --
    def P11(self) -> List[Row]:
        b = self.b
        n = N_PAGES * PER_PAGE
        lists = [("Link rel=\"last\" (GitHub: a bare array, no total)", f"/conv/github?n={n}&per_page={PER_PAGE}&latency_ms={L_MS}"),
                 ("offset/limit with a total (DRF LimitOffsetPagination)", f"/conv/drf-limit?n={n}&limit={PER_PAGE}&latency_ms={L_MS}"),
                 ("a total in a header (json-server: X-Total-Count, Link)", f"/conv/json-server?n={n}&_page=1&_limit={PER_PAGE}&latency_ms={L_MS}")]
        specs = [b.c_spec(f"C fetch P11 {label}", "fetch", ListDef(path, N_PAGES, PER_PAGE, addressing="detect"),
                          self.runs, extra=["--detect", "1"]) for label, path in lists]
        b.measure(*specs)
        floor = self.floor_window(8, self.p1)
        return [self.window_row("P11", f"{label}, N={N_PAGES}x{PER_PAGE}, L={L_MS} ms, detected, W=8",
                                b.results[f"C fetch P11 {label}"], floor, 1.10, 8) for label, _ in lists]

    # -- P4c: a cursor list (Slack), detected: inherently serial --
    def P4C(self) -> List[Row]:
        b = self.b
        pages = self.p4.pages
        lst = ListDef(f"/conv/slack?n={pages * PER_PAGE}&limit={PER_PAGE}&latency_ms={L_MS}", pages, PER_PAGE,
                      addressing="detect", total=False)
        b.measure(b.c_spec("C fetch P4c", "fetch", lst, self.slow_runs, extra=["--detect", "1"]))
        m = b.results["C fetch P4c"]
        floor = pages * L_MS / 1000.0
        label = f"N={pages}x{PER_PAGE}, a cursor (Slack's next_cursor), detected, L={L_MS} ms"
        target = "<= 1.05x floor (N x L)"
        if m.error or not m.runs:
            return [failed_row("P4c", label, m, target)]
        ratio = m.median() / floor
        return [fill_counts(Row("P4c", label, sheaf=secs(m.median()), floor=secs(floor), ratio=f"{ratio:.3f}x",
                                target=target, met=yes(ratio <= 1.05)), m)]

    # -- P2 --
    def P2(self) -> List[Row]:
        b = self.b
        b.measure(b.c_spec("C fetch P2", "fetch", self.p1, self.runs, window=32),
                  b.py_spec("threadpool P1 W=32", "threadpool", self.p1, self.runs, window=32))
        self.serial_baseline()
        m = b.results["C fetch P2"]
        floor = self.floor_ahead(32, self.p1)
        rows = [self.window_row("P2", "the same list, fixed W=32", m, floor, 1.15, 32)]
        rows += self.baseline_rows("P2", m, [("requests, serial walk", "requests serial P1"),
                                             ("ThreadPoolExecutor W=32 + requests", "threadpool P1 W=32")])
        return rows

    # -- P1a: the adaptive window (the client's default) --
    def P1A(self) -> List[Row]:
        b = self.b
        capacity = ListDef(self.p1.path + "&capacity=32", N_PAGES, PER_PAGE)
        limited = ListDef(self.p1.path + "&limit=4", N_PAGES, PER_PAGE)
        self.c_p1()
        b.measure(b.c_spec("C fetch P1 adaptive", "fetch", self.p1, self.runs, adaptive=True, warmup=1),
                  b.c_spec("C fetch P1 adaptive learnt", "fetch", self.p1, self.runs, adaptive=True, extra=["--warm", "1"]),
                  b.c_spec("C fetch P1 adaptive token", "fetch", self.p1, self.runs, adaptive=True, warmup=1,
                           extra=["--token", BENCH_TOKEN]),
                  b.c_spec("C fetch P1 capacity 32", "fetch", capacity, self.runs, adaptive=True),
                  b.c_spec("C fetch P1 capacity 32 token", "fetch", capacity, self.runs, adaptive=True,
                           extra=["--token", BENCH_TOKEN]),
                  b.c_spec("C fetch P1 capacity 32 W=8", "fetch", capacity, self.runs),
                  b.py_spec("threadpool P1 capacity 32 W=8", "threadpool", capacity, self.runs),
                  b.c_spec("C fetch P1 limit 4", "fetch", limited, self.runs, adaptive=True))
        python = b.async_python()
        if python is not None:
            # What a skilled user writes who knows the server takes 64 at once.
            b.measure(b.py_spec("aiohttp-window P1 W=64", "aiohttp-window", self.p1, self.runs, window=64,
                                python=python, warmup=1))
        rows = []
        m = b.results["C fetch P1 adaptive"]
        baselines = [(name, b.results[key]) for name, key in
                     (("ThreadPoolExecutor W=8", "threadpool P1 W=8"), ("httpx W=8", "httpx-window P1 W=8"),
                      ("aiohttp W=8", "aiohttp-window P1 W=8")) if key in b.results and b.results[key].runs]
        label = "P1 with the default adaptive window (starts at 8, up to 64), C, no credential"
        if m.error or not m.runs or not baselines:
            rows.append(failed_row("P1a", label, m if (m.error or not m.runs) else b.results["threadpool P1 W=8"]))
        else:
            name, best = min(baselines, key=lambda nb: nb[1].median())
            ratio = m.median() / best.median()
            rows.append(fill_counts(Row("P1a", label, sheaf=secs(m.median()),
                                        floor=f"{secs(best.median())} ({name})", ratio=f"{ratio:.2f}x",
                                        target="<= 0.90x the best Python baseline", met=yes(ratio <= 0.90)), m))
        label = "  the same against aiohttp with a fixed window of 64 (the server's capacity)"
        tuned = b.results.get("aiohttp-window P1 W=64")
        if tuned is None:
            rows.append(Row("P1a", label, sheaf="not run: needs build/bench-venv with aiohttp"))
        elif m.error or not m.runs or tuned.error or not tuned.runs:
            rows.append(failed_row("P1a", label, tuned if m.runs else m))
        else:
            ratio = m.median() / tuned.median()
            rows.append(fill_counts(Row("P1a", label, sheaf=secs(m.median()), floor=f"{secs(tuned.median())} (aiohttp W=64)",
                                        ratio=f"{ratio:.2f}x", target="<= 1.05x", met=yes(ratio <= 1.05)), m))
            for key, label in (("C fetch P1 adaptive token", "  the same from a client that sends a token (a window ahead of "
                                                                 "page one at once, not page one with page two alone)"),
                               ("C fetch P1 adaptive learnt", "  the same list again on the same client (the origin's window "
                                                              "learnt by the first; counts of both)")):
                other = b.results[key]
                if other.error or not other.runs:
                    rows.append(failed_row("P1a", label, other, "<= 1.05x"))
                    continue
                ratio = other.median() / tuned.median()
                rows.append(fill_counts(Row("P1a", label, sheaf=secs(other.median()),
                                            floor=f"{secs(tuned.median())} (aiohttp W=64)", ratio=f"{ratio:.2f}x",
                                            target="<= 1.05x", met=yes(ratio <= 1.05)), other))
        floor32 = self.floor_ahead(32, capacity)
        for key, label, limit in (("C fetch P1 capacity 32", "server capacity 32 (more requests wait their turn), adaptive window, C", 1.10),
                                  ("C fetch P1 capacity 32 token", "  the same from a client that sends a token", 1.10),
                                  ("C fetch P1 capacity 32 W=8", "  the same, fixed W=8, C", None),
                                  ("threadpool P1 capacity 32 W=8", "  the same, ThreadPoolExecutor W=8 + requests", None)):
            m = b.results[key]
            target = f"<= {limit:.2f}x the floor at W=32" if limit else "(report)"
            if m.error or not m.runs:
                rows.append(failed_row("P1a", label, m, target))
                continue
            ratio = m.median() / floor32
            rows.append(fill_counts(Row("P1a", label, sheaf=secs(m.median()), floor=secs(floor32), ratio=f"{ratio:.2f}x",
                                        target=target, met=yes(ratio <= limit) if limit else "-"), m))
        m = b.results["C fetch P1 limit 4"]
        label = "server answering 429 above 4 in flight, adaptive window, C"
        target = "<= 1.30x the floor at W=4; 429s <= 5%"
        if m.error or not m.runs:
            rows.append(failed_row("P1a", label, m, target))
        else:
            floor4 = self.floor_ahead(4, limited)
            ratio = m.median() / floor4
            refused = statistics.median(m.values("server_refused"))
            share = refused / statistics.median(m.values("server_requests"))
            rows.append(fill_counts(Row("P1a", label, sheaf=secs(m.median()), floor=secs(floor4), ratio=f"{ratio:.2f}x",
                                        target=target, met=yes(ratio <= 1.30 and share <= 0.05)), m))
            rows.append(Row("P1a", "  429s answered (median of the runs)", sheaf=f"{refused:.0f} ({share:.1%})",
                            target="<= 5% of requests", met=yes(share <= 0.05), runs=str(len(m.runs))))
        return rows

    # -- P3 --
    def P3(self) -> List[Row]:
        b = self.b
        b.measure(b.c_spec("C fetch P3", "fetch", self.p3, self.runs))
        self.serial_baseline()
        m = b.results["C fetch P3"]
        label = f"N={self.p3.pages}x{PER_PAGE}, page numbers, no total, W=8: speculative parallel walk"
        rows = [self.window_row("P3", label, m, self.floor_ahead(8, self.p3), 1.5, 8)]
        rows += self.baseline_rows("P3", m, [("requests, serial walk", "requests serial P1")])
        if m.runs:
            b.notes.append(f"P3's requests include the pages fetched past the list's end before its last page "
                           f"arrived ({self.p3.pages} pages; at most W = 8 more)")
        return rows

    # -- P4 --
    def P4(self) -> List[Row]:
        b = self.b
        b.measure(b.c_spec("C fetch P4", "fetch", self.p4, self.slow_runs))
        self.serial_baseline()
        m = b.results["C fetch P4"]
        floor = self.p4.pages * L_MS / 1000.0
        label = f"N={self.p4.pages}x{PER_PAGE}, next link only (serial), L={L_MS} ms"
        target = "<= 1.05x floor (N x L)"
        if m.error or not m.runs:
            rows = [failed_row("P4", label, m, target)]
        else:
            ratio = m.median() / floor
            rows = [fill_counts(Row("P4", label, sheaf=secs(m.median()), floor=secs(floor), ratio=f"{ratio:.3f}x",
                                    target=target, met=yes(ratio <= 1.05)), m)]
        if self.p4.pages == self.p1.pages:
            rows += self.baseline_rows("P4", m, [("requests, serial walk", "requests serial P1")])
        return rows

    # -- P5 --
    def P5(self) -> List[Row]:
        b = self.b
        m = self.c_p5()
        f = b.results["floor P5"]
        label = f"N={P5_PAGES}x{P5_PER_PAGE} small items, L=0, W=8 (fetch_all, C)"
        if f.error or not f.runs:
            return [failed_row("P5", label + ": the floor", f)]
        fl = f.runs[0]
        floor = f.median("parse_seconds")            # each run: the median of 3 passes
        fetch_only = f.median("fetch_only_seconds")
        mb = fl["page_bytes"] / 1e6
        rows = []
        if m.error or not m.runs:
            rows.append(failed_row("P5", label, m, "<= 2x floor"))
        else:
            ratio = m.median() / floor
            rows.append(fill_counts(Row("P5", label, sheaf=secs(m.median()),
                                        floor=f"{secs(floor)} (jansson {fl['jansson']} parse, {len(f.runs)} runs)",
                                        ratio=f"{ratio:.2f}x", target="<= 2x floor", met=yes(ratio <= 2.0)), m))
            rate = mb / m.median()
            rows.append(Row("P5", f"  page JSON throughput ({mb:.1f} MB of pages)", sheaf=f"{rate:.0f} MB/s",
                            floor=f"{mb / floor:.0f} MB/s (jansson)", target=">= 100 MB/s", met=yes(rate >= 100),
                            runs=str(len(m.runs))))
        rows.append(Row("P5", "  reference: server + loopback alone (8 keep-alive sockets, no parsing)",
                        sheaf=secs(m.median()) if m.runs else "-", floor=secs(fetch_only),
                        ratio=f"{m.median() / fetch_only:.2f}x" if m.runs else "-",
                        target="(Sheaf / fetch alone)", runs=str(len(f.runs))))
        rows += self.baseline_rows("P5", m, [("requests, serial walk", "requests serial P5"),
                                             ("ThreadPoolExecutor W=8 + requests", "threadpool P5 W=8")])
        rows += self.async_baseline_rows("P5", m)
        return rows + self.p5_scan(m) + self.p5_against_fetching_alone(m) + self.p5_from_python(m)

    def p5_scan(self, m: Measured) -> List[Row]:
        """The page scan at memory speed against simdjson on the same pages (saved once from the
        server): the library's scanner alone (bench/scan), and its whole page path through an
        in-memory transport (sheaf_bench --transport memory). Each driver's run reports the
        median of its passes; the row quotes the median of the runs."""
        b = self.b
        pages = Path(b.args.build_dir) / "bench" / "p5-pages.bin"
        page_bytes = 0
        with open(pages, "wb") as out:
            conn = b.server.connection()
            try:
                for page in range(1, P5_PAGES + 1):
                    conn.request("GET", f"{self.p5.path}&page={page}&per_page={P5_PER_PAGE}")
                    answer = conn.getresponse()
                    body = answer.read()
                    if answer.status != 200:
                        raise RuntimeError(f"P5 page {page}: HTTP {answer.status}")
                    out.write(page_record(body))
                    page_bytes += len(body)
            finally:
                conn.close()
        mb = page_bytes / 1e6
        label = f"  in memory ({P5_PAGES} pages saved from the server): "
        anchor, why = build_scan_driver("simdjson_pages", b.args.build_dir)
        scanner, why_scanner = build_scan_driver("scan_pages", b.args.build_dir)
        specs = [b.c_spec("C fetch P5 memory", "fetch", self.p5, self.runs, warmup=1, transport="memory",
                          extra=["--pages-file", str(pages)])]
        specs += [Spec(key, [driver, str(pages)], self.runs) for key, driver in
                  (("scan P5 sheaf", scanner), ("scan P5 simdjson", anchor)) if driver]
        b.measure(*specs)
        simd = b.results.get("scan P5 simdjson")
        if simd is None or simd.error or not simd.runs:
            return [Row("P5", label + "against simdjson", sheaf=f"not run: {why or simd.error}")]
        simd_rate = simd.runs[0]["bytes"] / 1e6 / simd.median()
        anchor_name = simd.runs[0]["driver"]
        rows = []
        for key, what, target in (("scan P5 sheaf", "the library's scanner alone (validation, item ranges, "
                                   "signals; bench/scan)", 0.5),
                                  ("C fetch P5 memory", "fetch_all through an in-memory transport: the library's "
                                   "whole page path (scan, plan, assembly, threads)", None)):
            x = b.results.get(key)
            if x is None or x.error or not x.runs:
                rows.append(Row("P5", label + what, sheaf=f"not run: {why_scanner if x is None else x.error}"))
                continue
            rate = (x.runs[0]["bytes"] / 1e6 if "bytes" in x.runs[0] else mb) / x.median()
            row = Row("P5", label + what, sheaf=f"{rate:.0f} MB/s", floor=f"{simd_rate:.0f} MB/s ({anchor_name})",
                      ratio=f"{rate / simd_rate:.2f}x", runs=x.runs_text,
                      target=f">= {target:.1f}x simdjson" if target else "(report)",
                      met=yes(rate / simd_rate >= target) if target else "-")
            if key == "C fetch P5 memory":
                row.scenario += f"; CPU {statistics.median(x.values('cpu_seconds')) * 1000:.0f} ms"
            rows.append(row)
        return rows

    def p5_against_fetching_alone(self, m: Measured) -> List[Row]:
        """C's fetch_all against the curl command fetching the same pages 8 at a time, no parsing;
        the CLI writing the list to a file against C."""
        b = self.b
        specs = [b.py_spec("curl P5 W=8", "curl-parallel", self.p5, self.runs, warmup=1)]
        if self.python_rows:
            specs.append(b.py_spec("CLI P5", "sheaf-cli", self.p5, self.runs))
        b.measure(*specs)
        rows = [self.ratio_row("P5", "  C fetch_all against `curl --parallel --parallel-max 8` fetching the same URLs "
                               "(bodies to /dev/null, no parsing; curl's start-up included)",
                               m, b.results["curl P5 W=8"], 1.2, "curl")]
        if self.python_rows:
            rows.append(self.ratio_row("P5", "  `sheaf get -o FILE --preset anchor` (the command less its start-up) "
                                       "against C fetch_all", b.results["CLI P5"], m, 1.2, "C"))
        return rows

    def p5_from_python(self, m: Measured) -> List[Row]:
        """Python's fetch_all against C, and its peak RSS against every Python baseline's."""
        b = self.b
        if not self.python_rows:
            return [Row("P5", "  Python fetch_all", sheaf=f"not run: {b.python_ok}")]
        b.measure(b.py_spec("Py fetch P5", "sheaf-fetch", self.p5, self.runs, warmup=1))
        py = b.results["Py fetch P5"]
        rows = [self.ratio_row("P5", f"  Python fetch_all ({decoder()}) against C fetch_all", py, m, 1.25, "C")]
        baselines = [key for key in ("requests serial P5", "threadpool P5 W=8", "httpx-window P5 W=8",
                                     "aiohttp-window P5 W=8") if key in b.results and b.results[key].runs]
        if py.runs and baselines:
            lowest = min(b.results[key].rss_mb() for key in baselines)
            rows.append(Row("P5", f"  Python fetch_all's peak RSS against the lowest of {len(baselines)} Python baselines",
                            sheaf=f"{py.rss_mb():.1f} MB", floor=f"{lowest:.1f} MB", ratio=f"{py.rss_mb() / lowest:.2f}x",
                            target="below every Python baseline", met=yes(py.rss_mb() < lowest), runs=py.runs_text))
        return rows + self.p5_as_arrow(m)

    def p5_as_arrow(self, m: Measured) -> List[Row]:
        """Python's fetch_arrow (a pyarrow.Table, no Python object per item) against C fetch_all:
        time, and peak RSS (pyarrow's own import is part of it, shown apart)."""
        b = self.b
        found = subprocess.run([sys.executable, "-c", "import pyarrow.json"], capture_output=True)
        if found.returncode != 0:
            return [Row("P5", "  Python fetch_arrow", sheaf="not run: pyarrow is not installed (pip install sheaf[arrow])")]
        b.measure(b.py_spec("Py arrow P5", "sheaf-arrow", self.p5, self.runs, warmup=1))
        arrow = b.results["Py arrow P5"]
        rows = [self.ratio_row("P5", "  Python fetch_arrow against C fetch_all", arrow, m, 1.2, "C")]
        if arrow.runs and m.runs:
            imported = pyarrow_import_mb(b.py_env)
            rows.append(Row("P5", f"  Python fetch_arrow's peak RSS against C fetch_all's (Python, sheaf and pyarrow "
                                  f"imported: {imported:.0f} MB of it)",
                            sheaf=f"{arrow.rss_mb():.1f} MB", floor=f"{m.rss_mb():.1f} MB",
                            ratio=f"{arrow.rss_mb() / m.rss_mb():.2f}x", target="<= C fetch_all's",
                            met=yes(arrow.rss_mb() <= m.rss_mb()), runs=arrow.runs_text))
            rows += self.p5_list_memory(m, arrow)
        return rows

    def p5_list_memory(self, m: Measured, arrow: Measured) -> List[Row]:
        """The memory the list itself takes: each reader's peak RSS above the same reader's on a
        one-item list (the process, its imports and the library's fixed cost taken out)."""
        b = self.b
        one = ListDef("/anchor?n=1", 1, 1)
        b.measure(b.c_spec("C fetch one item", "fetch", one, self.runs),
                  b.py_spec("Py arrow one item", "sheaf-arrow", one, self.runs))
        c_one, arrow_one = b.results["C fetch one item"], b.results["Py arrow one item"]
        if not (c_one.runs and arrow_one.runs):
            return []
        c_list, arrow_list = m.rss_mb() - c_one.rss_mb(), arrow.rss_mb() - arrow_one.rss_mb()
        return [Row("P5", f"  the list's own memory: Python fetch_arrow's peak RSS above a one-item list's "
                          f"({arrow_one.rss_mb():.1f} MB) against C fetch_all's above its one ({c_one.rss_mb():.1f} MB)",
                    sheaf=f"{arrow_list:.1f} MB", floor=f"{c_list:.1f} MB",
                    ratio=f"{arrow_list / c_list:.2f}x" if c_list > 0 else "-", target="<= C fetch_all's",
                    met=yes(arrow_list <= c_list), runs=arrow.runs_text)]

    def ratio_row(self, id_: str, label: str, m: Measured, against: Measured, limit: float, name: str) -> Row:
        """m's median against `against`'s (both measured in this run): at most `limit` times it."""
        target = f"<= {limit:.2f}x {name}"
        for x in (m, against):
            if x.error or not x.runs:
                return failed_row(id_, label, x, target)
        ratio = m.median() / against.median()
        return fill_counts(Row(id_, label, sheaf=secs(m.median()), floor=f"{secs(against.median())} ({name})",
                               ratio=f"{ratio:.2f}x", target=target, met=yes(ratio <= limit)), m)

    # -- P5U --
    def P5U(self) -> List[Row]:
        """P5's list from a plain Python API server sharing the two cores (uvicorn, each page
        answered from memory once built): C against the curl command fetching alone, Python
        against aiohttp, against C and against decoding alone, and the CPU seconds each client
        spends per 1,000 items (its own process only: the server's CPU is the same for all, and
        is what they share the cores with)."""
        b = self.b
        label = f"N={P5_PAGES}x{P5_PER_PAGE} small items, L=0, W=8, from uvicorn (pages cached)"
        if importlib.util.find_spec("uvicorn") is None:
            return [Row("P5U", label, sheaf="not run: needs uvicorn (pip install uvicorn)")]
        with UvicornServer() as server:
            lst = self.p5
            specs = [b.c_spec("C fetch P5U", "fetch", lst, self.runs, warmup=1, server=server),
                     b.py_spec("curl P5U W=8", "curl-parallel", lst, self.runs, warmup=1, server=server)]
            if self.python_rows:
                specs.append(b.py_spec("Py fetch P5U", "sheaf-fetch", lst, self.runs, warmup=1, server=server))
                specs.append(b.py_spec("decode floor P5U", "decode-floor", lst, self.runs, server=server))
            python = b.async_python()
            if python:
                specs.append(b.py_spec("aiohttp-window P5U W=8", "aiohttp-window", lst, self.runs, python=python,
                                       warmup=1, server=server))
            b.measure(*specs)
        c, curl = b.results["C fetch P5U"], b.results["curl P5U W=8"]
        py, aio = b.results.get("Py fetch P5U"), b.results.get("aiohttp-window P5U W=8")
        rows = [self.ratio_row("P5U", f"{label}: C fetch_all against `curl --parallel --parallel-max 8` fetching "
                               "the same URLs (no parsing; curl's start-up included)", c, curl, 1.15, "curl")]
        if py is None:
            rows.append(Row("P5U", "  Python fetch_all", sheaf=f"not run: {b.python_ok}"))
        else:
            if aio is None:
                rows.append(Row("P5U", "  Python fetch_all against aiohttp W=8",
                                sheaf="not run: needs build/bench-venv with aiohttp"))
            else:
                rows.append(self.ratio_row("P5U", f"  Python fetch_all ({decoder()}) against aiohttp, sliding window W=8",
                                           py, aio, 0.8, "aiohttp"))
            rows.append(self.ratio_row("P5U", f"  Python fetch_all ({decoder()}) against C fetch_all", py, c, 1.3, "C"))
            floor = b.results["decode floor P5U"]
            if floor.runs and c.runs:
                rows.append(Row("P5U", f"  reference: {decoder()}.loads of the same pages alone, fetched beforehand (the least "
                                       "a Python client handing out dicts spends), against C fetch_all",
                                sheaf=secs(floor.median()), floor=f"{secs(c.median())} (C)",
                                ratio=f"{floor.median() / c.median():.2f}x", target="(report)", runs=floor.runs_text))
        # CPU seconds per 1,000 items, each client's own process.
        def per_1000(m: Optional[Measured]) -> Optional[float]:
            if m is None or m.error or not m.runs or not m.values("cpu_seconds"):
                return None
            return statistics.median(m.values("cpu_seconds")) / (lst.n / 1000)
        peers = [(name, per_1000(m)) for name, m in (("curl (fetching only)", curl), ("aiohttp W=8", aio),
                                                      ("Python fetch_all", py))]
        mine = per_1000(c)
        if mine is None:
            return rows + [failed_row("P5U", "  CPU seconds per 1,000 items, C fetch_all", c)]
        for name, theirs in peers:
            if theirs is None:
                continue
            rows.append(Row("P5U", f"  CPU per 1,000 items (client process): C fetch_all against {name}",
                            sheaf=f"{mine * 1000:.2f} ms", floor=f"{theirs * 1000:.2f} ms ({name})",
                            ratio=f"{mine / theirs:.2f}x", target="< 1x (C below every peer)",
                            met=yes(mine < theirs), runs=c.runs_text))
        python_cpu, aio_cpu = per_1000(py), per_1000(aio)
        if python_cpu is not None and aio_cpu is not None:
            rows.append(Row("P5U", "  CPU per 1,000 items (client process): Python fetch_all against aiohttp W=8",
                            sheaf=f"{python_cpu * 1000:.2f} ms", floor=f"{aio_cpu * 1000:.2f} ms (aiohttp)",
                            ratio=f"{python_cpu / aio_cpu:.2f}x", target="(report)", runs=py.runs_text))
        return rows

    # -- P6 --
    def P6(self) -> List[Row]:
        b = self.b
        specs = [b.c_spec("C fetch P1 blocking transport", "fetch", self.p1, self.runs, transport="blocking")]
        if self.python_rows:
            specs.append(b.py_spec("Py fetch P1 Python transport", "sheaf-fetch", self.p1, self.runs,
                                   transport="python", warmup=1))
        b.measure(*specs)
        floor = self.floor_ahead(8, self.p1)
        m = b.results["C fetch P1 blocking transport"]
        rows = [self.window_row("P6", "P1 through a blocking C transport (a socket per request)", m, floor, 1.10, 8)]
        if self.python_rows:
            rows.append(self.window_row("P6", "P1 through a Python transport (http.client, keep-alive)",
                                        b.results["Py fetch P1 Python transport"], floor, 1.10, 8))
        else:
            rows.append(Row("P6", "P1 through a Python transport", sheaf=f"not run: {b.python_ok}", met="-"))
        return rows

    # -- P7 --
    def P7(self) -> List[Row]:
        b = self.b
        if not self.python_rows:
            return [Row("P7", "P1 and P5 from Python", sheaf=f"not run: {b.python_ok}")]
        self.c_p1()
        self.c_p5()
        b.measure(b.c_spec("C stream P1", "stream", self.p1, self.runs),
                  b.py_spec("Py fetch P1", "sheaf-fetch", self.p1, self.runs, warmup=1),
                  b.py_spec("Py stream P1", "sheaf-stream", self.p1, self.runs))
        b.measure(b.c_spec("C stream P5", "stream", self.p5, self.runs, warmup=1),
                  b.py_spec("Py fetch P5", "sheaf-fetch", self.p5, self.runs, warmup=1),
                  b.py_spec("Py stream P5", "sheaf-stream", self.p5, self.runs, warmup=1))
        b.measure(b.c_spec("C stream small", "stream", self.small, self.runs, warmup=1),
                  b.py_spec("Py stream small", "sheaf-stream", self.small, self.runs, warmup=1))
        rows = []

        def objects_cpu(run: dict) -> float:
            """json.loads of the deltas and freeing them, on the consuming thread (CPU seconds)."""
            return run["json_loads_cpu_seconds"] + run["freeing_cpu_seconds"]

        def compare(label, py_key, c_key, limit: Optional[float], per_snapshot: str = "") -> None:
            """A Python row against C; per_snapshot "wall" (latency-bound: the wall-clock gap
            only) or "cpu" adds the per-snapshot rows."""
            py, c = b.results[py_key], b.results[c_key]
            target = f"<= {limit:.2f}x C" if limit else "(report)"
            if py.error or not py.runs or c.error or not c.runs:
                rows.append(failed_row("P7", label, py if (py.error or not py.runs) else c, target))
                return
            ratio = py.median() / c.median()
            rows.append(fill_counts(Row("P7", label, sheaf=secs(py.median()), floor=f"{secs(c.median())} (C)",
                                        ratio=f"{ratio:.2f}x", target=target,
                                        met=yes(ratio <= limit) if limit else "-"), py))
            if not per_snapshot:
                return
            snaps = statistics.median(py.values("snapshots"))
            c_snaps = statistics.median(c.values("snapshots"))
            gap_us = (py.median() - c.median()) / snaps * 1e6
            if per_snapshot == "wall":
                rows.append(Row("P7", f"  per-snapshot overhead: (Python - C) / {snaps:.0f} snapshots (C had {c_snaps:.0f})",
                                sheaf=f"{gap_us:.0f} us", target="(report: hidden by L)", met="-", runs=py.runs_text))
                return
            # What the Python layer costs per snapshot beyond turning JSON into Python objects and
            # back (json.loads's own speed and freeing the objects: the same for any Python
            # client): pulling the snapshot, the ctypes calls, the copy, the Snapshot. Counted in
            # CPU time of the consuming thread, where that work runs, less json.loads as the
            # binding called it there and the freeing of each delta (both timed in place by the
            # driver). Wall time hides work done on the other core meanwhile, and the whole
            # process's CPU carries the library's threads, whose scheduling noise on a shared
            # 2-core machine is larger than the figure (shown for comparison).
            rows.append(Row("P7", "  of which json.loads of the deltas and freeing them (consuming thread's CPU)",
                            sheaf=secs(statistics.median(objects_cpu(r) for r in py.runs)), target="(report)",
                            met="-", runs=py.runs_text))
            thread = statistics.median((r["thread_cpu_seconds"] - objects_cpu(r)) / r["snapshots"] for r in py.runs)
            rows.append(Row("P7", f"  per-snapshot overhead: (consuming thread's CPU - json.loads - freeing) / {snaps:.0f} snapshots",
                            sheaf=f"{thread * 1e6:.0f} us", target="<= 50 us", met=yes(thread * 1e6 <= 50),
                            runs=py.runs_text))
            process = statistics.median(r["cpu_seconds"] - objects_cpu(r) for r in py.runs)
            per_us = (process - statistics.median(c.values("cpu_seconds"))) / snaps * 1e6
            rows.append(Row("P7", f"  for comparison, the whole process: (Python CPU - json.loads - freeing - C CPU) / snapshots "
                                  f"(C had {c_snaps:.0f}); wall: (Python - C) / snapshots = {gap_us:.0f} us",
                            sheaf=f"{per_us:.0f} us", target="(report)", met="-", runs=py.runs_text))

        compare("P1 fetch_all from Python (vs the same from C)", "Py fetch P1", "C fetch P1", 1.05)
        compare("P1 snapshot generator from Python (vs a C snapshot callback)", "Py stream P1", "C stream P1", 1.05,
                "wall")
        compare("P5 fetch_all from Python (vs C)", "Py fetch P5", "C fetch P5", None)
        compare("P5 snapshot generator from Python (vs C)", "Py stream P5", "C stream P5", None, "cpu")
        # Small pages: little to decode, so the fixed cost per snapshot shows. (The Python server
        # is the bottleneck here, ~0.1-0.2 ms per request, so the wall times mostly wait for it.)
        compare(f"{SMALL_PAGES}x{SMALL_PER_PAGE} items, L=0: snapshot generator (vs C)", "Py stream small",
                "C stream small", None, "cpu")
        return rows

    # -- P10: HTTP/2 --
    def P10(self) -> List[Row]:
        """The P1 list over TLS from a hypercorn server: HTTP/2 (the window multiplexed over one
        connection) against HTTP/1.1 (a TLS connection per request in flight)."""
        b = self.b
        label = f"N={N_PAGES}x{PER_PAGE}, L={L_MS} ms over TLS: HTTP/2"
        if importlib.util.find_spec("hypercorn") is None:
            return [Row("P10", label, sheaf="not run: needs hypercorn (pip install hypercorn)")]
        with H2Server() as server:
            lst = ListDef(f"/anchor?n={N_PAGES * PER_PAGE}&latency_ms={L_MS}", N_PAGES, PER_PAGE)
            tls = ["--ca", server.ca]
            specs = []
            for window, adaptive in ((8, False), (8, True)):
                for version in ("auto", "1.1"):
                    specs.append(b.c_spec(f"C fetch P10 {version} {'adaptive' if adaptive else window}", "fetch", lst,
                                          self.runs, window=window, adaptive=adaptive, warmup=1,
                                          extra=tls + ["--http", version], server=server))
            b.measure(*specs)
        rows = []
        for kind, text in (("8", "fixed W=8"), ("adaptive", "the default adaptive window")):
            h2, h1 = b.results[f"C fetch P10 auto {kind}"], b.results[f"C fetch P10 1.1 {kind}"]
            row = self.ratio_row("P10", f"{label}, {text} (fetch_all, C) against HTTP/1.1 with the same window",
                                 h2, h1, 0.9, "HTTP/1.1")
            if h2.runs:
                connections = h2.span("server_connections")
                row.in_flight += f" ({connections} connection{'s' if connections != '1' else ''})"
                if connections != "1":
                    row.met = "NO (connections)"
            rows.append(row)
            if h1.runs:
                rows.append(fill_counts(Row("P10", f"  HTTP/1.1, {text}: {h1.span('server_connections')} TLS connections",
                                            sheaf=secs(h1.median()), target="(report)"), h1))
        return rows + self.p10_connection_limit(lst) + self.p10_round_trip(lst)

    def p10_h2_row(self, label: str, h2: Measured, h1: Measured, limit: float) -> Row:
        """HTTP/2 against HTTP/1.1: the ratio, and HTTP/2 must have used one connection and met
        no 503."""
        row = self.ratio_row("P10", label, h2, h1, limit, "HTTP/1.1")
        if h2.runs:
            connections = h2.span("server_connections")
            row.in_flight += f" ({connections} connection{'s' if connections != '1' else ''})"
            if connections != "1":
                row.met = "NO (connections)"
            elif max(h2.values("server_refused")) > 0:
                row.met = f"NO ({max(h2.values('server_refused'))} 503s)"
        return row

    def p10_connection_limit(self, lst: ListDef) -> List[Row]:
        """The same list from a server that takes at most 6 connections per client and answers
        503 past them: HTTP/1.1 is held to 6 in flight, HTTP/2 takes the whole window over one."""
        n = P10_MAX_CONNECTIONS
        with H2Server(max_connections=n) as server:
            h2, h1 = self.p10_versions(f"{n} connections", lst, server)
        label = (f"N={N_PAGES}x{PER_PAGE}, L={L_MS} ms over TLS, a server taking {n} connections per client (503 past "
                 f"them): HTTP/2, the default adaptive window (fetch_all, C) against HTTP/1.1")
        rows = self.p10_pair_rows(label, h2, h1, 0.25)
        if h1.runs:
            refused = statistics.median(h1.values("server_refused"))
            share = refused / statistics.median(h1.values("server_requests"))
            rows.append(Row("P10", f"  503s answered to HTTP/1.1 and retried (median of the runs; {h1.span('server_refused')})",
                            sheaf=f"{refused:.0f} ({share:.1%})", target="<= 5% of requests", met=yes(share <= 0.05),
                            runs=h1.runs_text))
        return rows

    def p10_round_trip(self, lst: ListDef) -> List[Row]:
        """The same list with a real round trip: 20 ms each way, by netem in a network namespace
        when the kernel has it, else by the userspace delay proxy in front of the server."""
        b = self.b
        delay = P10_ONE_WAY_MS
        path = NetemPath(delay)
        why = path.unavailable() or path.create()
        proxy: Optional[DelayProxy] = None
        if why is None:
            server = H2Server(host=path.address, prefix=path.prefix)
            how = f"netem adding {delay} ms each way (a network namespace)"
        else:
            server = H2Server()
            proxy = DelayProxy(delay)
            how = f"a delay proxy adding {delay} ms each way"
            b.notes.append(f"P10's round-trip rows: no netem ({why}): Tests/server/delay_proxy.py delays each chunk "
                           f"of bytes {delay} ms each way instead. It does not model the TCP handshake (a new "
                           f"connection to the proxy costs no round trip; the TLS handshake does cross it), "
                           f"bandwidth, loss or TCP's congestion window")
        try:
            server.start()
            if proxy is not None:
                proxy.start(server.port)
                server.front_port = proxy.port
            h2, h1 = self.p10_versions("rtt", lst, server)
        finally:
            if proxy is not None:
                proxy.stop()
            server.stop()
            if why is None:
                path.remove()
        label = (f"N={N_PAGES}x{PER_PAGE}, L={L_MS} ms over TLS through {how}: HTTP/2, the default adaptive "
                 f"window (fetch_all, C) against HTTP/1.1")
        return self.p10_pair_rows(label, h2, h1, 0.80)

    def p10_versions(self, key: str, lst: ListDef, server: Any) -> Tuple[Any, Any]:
        """The list from `server` with the default adaptive window over HTTP/2 (the libcurl
        default) and over HTTP/1.1: their results."""
        b = self.b
        b.measure(*[b.c_spec(f"C fetch P10 {key} {version} adaptive", "fetch", lst, self.runs, adaptive=True,
                             warmup=1, extra=["--ca", server.ca, "--http", version], server=server)
                    for version in ("auto", "1.1")])
        return b.results[f"C fetch P10 {key} auto adaptive"], b.results[f"C fetch P10 {key} 1.1 adaptive"]

    def p10_pair_rows(self, label: str, h2: Any, h1: Any, target: float) -> List[Row]:
        """HTTP/2's row against HTTP/1.1, and HTTP/1.1's connections below it."""
        rows = [self.p10_h2_row(label, h2, h1, target)]
        if h1.runs:
            rows.append(fill_counts(Row("P10", f"  HTTP/1.1 there: {h1.span('server_connections')} TLS connections",
                                        sheaf=secs(h1.median()), target="(report)"), h1))
        return rows

    # -- P12: the first snapshot --
    def P12(self) -> List[Row]:
        """Time to the first snapshot of P1 against one round trip of page one plus parsing it."""
        b = self.b
        b.measure(b.floor_spec("floor P12", self.p1, self.runs, reps=5, pages=1, window=1),
                  b.c_spec("C stream P1", "stream", self.p1, self.runs),
                  b.c_spec("C stream P1 warm", "stream", self.p1, self.runs, extra=["--warm", "1"]))
        f = b.results["floor P12"]
        if f.error or not f.runs:
            return [failed_row("P12", "first snapshot of P1: the floor", f)]
        floor = f.median("fetch_only_seconds") + f.median("parse_seconds")
        rows = []
        for key, label in (("C stream P1", f"first snapshot of P1 (L={L_MS} ms), C snapshot callback, the process's "
                                            "first list (libcurl and TLS initialised on the way)"),
                           ("C stream P1 warm", "  the same from a client that has run a list before")):
            m = b.results[key]
            if m.error or not m.runs:
                rows.append(failed_row("P12", label, m, "<= 1.10x floor"))
                continue
            first = statistics.median(m.values("first_items_s"))
            rows.append(Row("P12", label, sheaf=secs(first),
                            floor=f"{secs(floor)} (page one over a new socket + jansson parse)",
                            ratio=f"{first / floor:.2f}x", target="<= 1.10x floor", met=yes(first / floor <= 1.10),
                            runs=m.runs_text))
        return rows

    # -- P13: no waste after a definitive failure --
    def P13(self) -> List[Row]:
        """A 404 in the middle of a list with a total: the requests the server saw after it
        answered the 404, against those it had in flight then (the 404 aside)."""
        b = self.b
        label = f"a 404 on page {P13_FAILING} of {P13_PAGES} (L={L_MS} ms, total), default adaptive window, Python fetch_all"
        if not self.python_rows:
            return [Row("P13", label, sheaf=f"not run: {b.python_ok}")]
        lst = ListDef(f"/anchor?n={P13_PAGES * PER_PAGE}&latency_ms={L_MS}&fail={P13_FAILING}:1000:404",
                      P13_PAGES, PER_PAGE)
        b.measure(b.py_spec("Py fetch P13", "sheaf-fetch-404", lst, self.runs, timeline=True,
                            extra=["--fail-page", str(P13_FAILING), "--adaptive", "1"]))
        m = b.results["Py fetch P13"]
        if m.error or not m.runs:
            return [failed_row("P13", label, m, "after <= in flight then")]
        # The pages of the burst that holds page 10 left the client before its 404 (answered at
        # once) could reach it; the server accepts them some 0.3 ms apart, so they arrive in the
        # first milliseconds after it (0.2 to 2.2 ms in stop 37's runs). A request arriving later
        # was sent after the library could know: there must be none.
        grace = 0.005
        after, late, then = [], [], []
        for run in m.runs:
            failure = run["timeline"]["failures"][0]
            after.append(sum(1 for at in run["timeline"]["arrivals"] if at > failure["at"]))
            late.append(sum(1 for at in run["timeline"]["arrivals"] if at > failure["at"] + grace))
            then.append(failure["in_flight"] - 1)
        return [fill_counts(Row("P13", label, sheaf=f"{max(late)} request(s) over {grace * 1000:.0f} ms after the 404, "
                                                    f"{max(after)} after it in all (most of {len(after)} runs)",
                                floor=f"{min(then)}-{max(then)} in flight then",
                                target=f"none over {grace * 1000:.0f} ms after", met=yes(max(late) == 0)), m)]

    def Q3(self) -> List[Row]:
        """Issue 44's third row: a 200-page GitHub-shaped list into a token with 120 points (the
        server's quota=, 403 past it), a window of 64: the server's refusals, where it stopped, and
        that the resume token (with a token of full points) gave the rest exactly (the driver fails
        the run otherwise)."""
        b = self.b
        label = (f"{Q3_PAGES}-page GitHub-shaped list into a token with {Q3_POINTS} points, W={Q3_WINDOW}, L={L_MS} ms "
                 "(Python fetch_all, max_wait=0; then the resume token with the next hour's points)")
        if not self.python_rows:
            return [Row("Q3", label, sheaf=f"not run: {b.python_ok}")]
        lst = ListDef(f"/anchor?n={Q3_PAGES * PER_PAGE}&latency_ms={L_MS}&quota={Q3_POINTS}:3600", Q3_PAGES, PER_PAGE)
        b.measure(b.py_spec("Py quota Q3", "sheaf-quota", lst, self.runs, window=Q3_WINDOW))
        m = b.results["Py quota Q3"]
        target = "0 refusals at the server; stops SHEAF_E_RATE_LIMITED, resumes exactly"
        if m.error or not m.runs:
            return [failed_row("Q3", label, m, target)]
        refused = [run["server_refused"] for run in m.runs]
        stopped = sorted({run["stopped_after"] for run in m.runs})
        return [fill_counts(Row("Q3", label, sheaf=f"{max(refused)} refusals; stopped after {stopped[0]}-{stopped[-1]} items "
                                                   f"({Q3_POINTS * PER_PAGE} paid for) in {m.median():.3f} s",
                                floor=f"{Q3_POINTS} points", target=target, met=yes(max(refused) == 0)), m)]

    def C1(self) -> List[Row]:
        """Issue 44's first two rows: a 200-page GitHub-shaped list (items of 2 KB, GitHub's issues
        are larger) at 50 ms, fetched with an empty response cache, re-synced with it (every page
        unchanged), and re-synced after 3 items on 3 pages changed: the points the server counted
        (answers other than 304), the bytes it sent, and the times (the driver checks the items)."""
        b = self.b
        label = (f"{N_PAGES}-page GitHub-shaped list (etag=, 2 KB items), L={L_MS} ms, W=8: re-sync with the cache "
                 "(Python fetch_all, cache=)")
        if not self.python_rows:
            return [Row("C1", label, sheaf=f"not run: {b.python_ok}")]
        lst = ListDef(f"/anchor?n={N_PAGES * PER_PAGE}&latency_ms={L_MS}&etag=1&pad=2000", N_PAGES, PER_PAGE)
        link = ListDef(lst.path + "&mbps=100", N_PAGES, PER_PAGE)
        specs = [b.py_spec("Py resync C1", "sheaf-resync", lst, self.runs),
                 b.py_spec("Py resync C1 100 Mbit/s", "sheaf-resync", link, self.runs)]
        python = b.async_python()
        if python:
            specs.append(b.py_spec("aiohttp resync C1", "aiohttp-resync", lst, self.runs, window=64, python=python))
        b.measure(*specs)
        m = b.results["Py resync C1"]
        if m.error or not m.runs:
            return [failed_row("C1", label, m, "0 points; bytes <= 2 % of the first run; time <= 0.6 x the first run")]
        points = max(m.values("resync_points"))
        share = max(run["resync_bytes"] / run["first_bytes"] for run in m.runs)
        ratio = max(run["seconds"] / run["first_seconds"] for run in m.runs)
        changed = sorted({run["changed_points"] for run in m.runs})
        first = statistics.median(m.values("first_seconds"))
        return [Row("C1", label, sheaf=f"{points} points; {share:.2%} of the first run's bytes; "
                                       f"{m.median():.3f} s re-sync vs {first:.3f} s first ({ratio:.2f} x, the worst run)",
                    floor=f"{N_PAGES} pages of {PER_PAGE}",
                    target="0 points; bytes <= 2 % of the first run; time <= 0.6 x the first run",
                    met=yes(points == 0 and share <= 0.02 and ratio <= 0.6)),
                *self.link_row(b.results["Py resync C1 100 Mbit/s"]),
                *self.resync_peer_row(b.results.get("aiohttp resync C1"), m),
                Row("C2", "  the same after 3 items on 3 pages changed (/_edit)",
                    sheaf=f"{'-'.join(map(str, changed))} points in {statistics.median(m.values('changed_seconds')):.3f} s",
                    target="exactly 3 points", met=yes(changed == [3]))]

    @staticmethod
    def resync_peer_row(peer, m) -> List[Row]:
        """C1 against its peer: an aiohttp conditional-request loop (ETags kept on disk, a
        semaphore of 64), the re-sync timed alike."""
        label = "  baseline: aiohttp conditional-request loop, ETags and bodies on disk, semaphore of 64"
        if peer is None:
            return [Row("C1", label, sheaf="not run: needs build/bench-venv with aiohttp")]
        if peer.error or not peer.runs:
            return [failed_row("C1", label, peer)]
        ratio = m.median() / peer.median()
        return [Row("C1", label, sheaf=f"{m.median():.3f} s re-sync",
                    floor=f"{peer.median():.3f} s re-sync (first {statistics.median(peer.values('first_seconds')):.3f} s), "
                          f"{max(peer.values('resync_points'))} points",
                    ratio=f"{ratio:.2f} x", target="<= 1.0 x the peer's re-sync", met=yes(ratio <= 1.0))]

    @staticmethod
    def link_row(m) -> List[Row]:
        """C1 beside it: the same over one link of 100 Mbit/s (the server's mbps=, shared by the
        run's requests as a client's downlink is), where a page's bytes take time as they do on a
        real network, and a 304's few do not."""
        if m.error or not m.runs:
            return [failed_row("C1", "  the same over a link of 100 Mbit/s (mbps=100)", m)]
        ratio = max(run["seconds"] / run["first_seconds"] for run in m.runs)
        first = statistics.median(m.values("first_seconds"))
        return [Row("C1", "  the same over a link of 100 Mbit/s (mbps=100): another measure, beside the row above",
                    sheaf=f"{max(m.values('resync_points'))} points; {m.median():.3f} s re-sync vs {first:.3f} s first "
                          f"({ratio:.2f} x, the worst run)",
                    target="time <= 0.6 x the first run", met=yes(ratio <= 0.6))]

    # -- memory --
    def M1(self) -> List[Row]:
        m = self.c_p5()
        label = "peak RSS of fetch_all on P5 (C)"
        if m.error or not m.runs:
            return [failed_row("M1", label, m)]
        json_mb = m.runs[0]["json_bytes"] / 1e6
        limit = 2 * json_mb + 40     # issue 14's budget (BENCHMARKS.md's was 3 x)
        rss = max(m.values("peak_rss_kb")) * 1024 / 1e6
        return [fill_counts(Row("M1", label, sheaf=f"{rss:.1f} MB",
                                floor=f"{limit:.1f} MB = 2 x {json_mb:.1f} + 40",
                                ratio=f"{rss / limit:.2f}x", target="<= 1.00x limit", met=yes(rss <= limit)), m)]

    def M2(self) -> List[Row]:
        b = self.b
        small, big = self.stream_small, self.stream_big
        runs = 1 if self.quick else min(self.runs, 3)
        b.measure(b.c_spec("C stream keep0 small N", "stream", small, runs, warmup=0))
        b.measure(b.c_spec("C stream keep0 big N", "stream", big, 1, timeout=900))
        ms, mb_ = b.results["C stream keep0 small N"], b.results["C stream keep0 big N"]
        rows = []
        label_s = f"stream, keep_items 0, {small.pages:,} pages x {STREAM_PER_PAGE}, L=0: peak RSS"
        label_b = f"stream, keep_items 0, {big.pages:,} pages x {STREAM_PER_PAGE}, L=0: peak RSS"
        if ms.error or not ms.runs:
            return [failed_row("M2", label_s, ms)]
        rss_s = max(ms.values("peak_rss_kb")) * 1024 / 1e6
        rows.append(fill_counts(Row("M2", label_s, sheaf=f"{rss_s:.1f} MB",
                                    floor=f"({statistics.median(ms.values('seconds')):.1f} s)"), ms))
        if mb_.error or not mb_.runs:
            rows.append(failed_row("M2", label_b, mb_))
            return rows
        rss_b = max(mb_.values("peak_rss_kb")) * 1024 / 1e6
        ratio = rss_b / rss_s
        growth = (rss_b - rss_s) * 1e6 / (big.pages - small.pages)
        rows.append(fill_counts(Row("M2", label_b, sheaf=f"{rss_b:.1f} MB",
                                    floor=f"{rss_s:.1f} MB at {small.pages:,} pages",
                                    ratio=f"{ratio:.2f}x", target=f"flat: <= 1.10x the {small.pages:,}-page RSS",
                                    met=yes(ratio <= 1.10)), mb_))
        rows.append(Row("M2", "  growth per page between the two", sheaf=f"{growth:.0f} B/page", target="(report)"))
        per_s = ms.median() / small.pages * 1e6
        per_b = mb_.median() / big.pages * 1e6
        rows.append(Row("M2", f"  time per page: {big.pages:,} pages vs {small.pages:,}",
                        sheaf=f"{per_b:.0f} us/page", floor=f"{per_s:.0f} us/page",
                        ratio=f"{per_b / per_s:.2f}x", target="(report: linear = 1x)", runs=mb_.runs_text))
        return rows

    # -- F1, F2: many lists as one job (bench/fanout.py, its own server and org fixture) --
    def F1(self) -> List[Row]:
        argv = [sys.executable, str(ROOT / "bench" / "fanout.py"), "--runs", str(self.runs),
                "--build-dir", str(self.b.args.build_dir), "--json"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=3600, env=self.b.c_env)
        if done.returncode != 0:
            return [Row("F1", "300 child lists as one group (bench/fanout.py)", sheaf=f"FAILED: {done.stderr.strip()[-120:]}",
                        met="NO")]
        return [Row(id_, scenario, sheaf=sheaf, floor=against, ratio=ratio, target=target, met=met,
                    runs=str(self.runs)) for id_, scenario, sheaf, against, ratio, target, met in json.loads(done.stdout)]

    # -- R1-R3: cursor lists split by their range filter --
    def split_row(self, id_: str, label: str, m: Measured, floor: float, limit: float) -> Row:
        target = f"<= {limit:.2f}x floor; 0 twice, 0 missing"
        if m.error or not m.runs:
            return failed_row(id_, label, m, target)
        ratio = m.median() / floor
        return fill_counts(Row(id_, label, sheaf=secs(m.median()), floor=secs(floor), ratio=f"{ratio:.2f}x",
                               target=target, met=yes(ratio <= limit)), m)

    def split_rows(self, id_: str, query: str, label: str, limit: float = 1.3) -> List[Row]:
        b = self.b
        pages = R_PAGES if not self.quick else 200
        path = (f"/range/stripe?n={pages * R_PER_PAGE}&span={R_SPAN // R_PAGES * pages}&limit={R_PER_PAGE}"
                f"&latency_ms={R_L_MS}&capacity={R_CAPACITY}{query}")
        lst = ListDef(path, pages, R_PER_PAGE, addressing="detect", total=False)
        specs = [b.py_spec(f"sheaf {id_}", "sheaf-split", lst, self.slow_runs, extra=["--adaptive", "1"])]
        python = b.async_python()
        if python is not None:
            high = 1_700_000_000
            specs.append(b.py_spec(f"aiohttp {id_}", "aiohttp-split", lst, self.slow_runs, window=R_CAPACITY, python=python,
                                   extra=["--range-low", str(high - R_SPAN // R_PAGES * pages), "--range-high", str(high),
                                          "--steps", str(R_CAPACITY)]))
        b.measure(*specs)
        floor = math.ceil(pages / R_CAPACITY) * R_L_MS / 1000.0
        rows = [self.split_row(id_, f"{label}, {pages}x{R_PER_PAGE}, L={R_L_MS} ms, capacity {R_CAPACITY}, "
                               f"adaptive (Python fetch_all; a serial walk is {pages * R_L_MS / 1000:.0f} s)",
                               b.results[f"sheaf {id_}"], floor, limit)]
        if python is not None:
            rows += self.baseline_rows(id_, b.results[f"sheaf {id_}"],
                                       [(f"aiohttp range splitter, {R_CAPACITY} fixed steps of the known range, "
                                         f"Semaphore({R_CAPACITY})", f"aiohttp {id_}")])
        return rows

    def R1(self) -> List[Row]:
        return self.split_rows("R1", "", "Stripe-shaped cursor list, created filter")

    def R2(self) -> List[Row]:
        return self.split_rows("R2", "&burst=450:20&insert_rate=20",
                               "R1 with 20 bursts of 450 items in one second and 20 inserts a second")

    def R3(self) -> List[Row]:
        """P4c's Slack list read through its range filter (oldest/latest)."""
        b = self.b
        pages = R3_PAGES
        lst = ListDef(f"/range/slack?n={pages * PER_PAGE}&limit={PER_PAGE}&latency_ms={L_MS}&capacity=64", pages, PER_PAGE,
                      addressing="detect", total=False)
        b.measure(b.py_spec("sheaf R3", "sheaf-split", lst, self.slow_runs, extra=["--adaptive", "1", "--preset", "slack"]))
        floor = math.ceil(pages / 64) * L_MS / 1000.0
        return [self.split_row("R3", f"P4c with its range filter: Slack-shaped, {pages}x{PER_PAGE}, L={L_MS} ms, "
                               "capacity 64, slack preset, adaptive (Python fetch_all; P4c walks it in N x L)",
                               b.results["sheaf R3"], floor, 1.3)]

    def N1(self) -> List[Row]:
        """A Notion-shaped database query: a cursor walk of POSTs, the cursor in each body."""
        b = self.b
        pages = N1_RESULTS // N1_PAGE
        lst = ListDef(f"/post/notion/query?n={N1_RESULTS}&latency_ms={N1_L_MS}", pages, N1_PAGE, addressing="next", total=False)
        b.measure(b.py_spec("sheaf N1", "sheaf-post", lst, self.slow_runs))
        m = b.results["sheaf N1"]
        label = (f"Notion-shaped POST query, {N1_RESULTS} results, {N1_PAGE} a page, L={N1_L_MS} ms "
                 "(Python fetch_all, notion preset; a cursor walk)")
        target = f"{pages} requests; <= 1.05x {pages} x L"
        if m.error or not m.runs:
            return [failed_row("N1", label, m, target)]
        floor = pages * N1_L_MS / 1000.0
        ratio = m.median() / floor
        requests = set(m.values("server_requests"))
        return [fill_counts(Row("N1", label, sheaf=secs(m.median()), floor=secs(floor), ratio=f"{ratio:.2f}x",
                                target=target, met=yes(ratio <= 1.05 and requests == {pages})), m)]

    def G1(self) -> List[Row]:
        """A GitHub-shaped GraphQL connection, each issue's comments completed by a nested query."""
        b = self.b
        pages = G1_ISSUES // G1_PAGE
        # Issue i has (i * 7) % 23 comments (post_api.py), 5 of them in the list's query: the
        # fewest requests are the pages and one nested page (of 100) per issue with more than 5.
        nested = sum(1 for i in range(1, G1_ISSUES + 1) if (i * 7) % 23 > 5)
        fewest = pages + nested
        lst = ListDef(f"/post/graphql?n={G1_ISSUES}&latency_ms={G1_L_MS}", pages, G1_PAGE, addressing="next", total=False)
        b.measure(b.py_spec("sheaf G1", "sheaf-graphql", lst, self.slow_runs, window=G1_WINDOW))
        m = b.results["sheaf G1"]
        label = (f"GraphQL: {G1_ISSUES} issues, {G1_PAGE} a page, nested comments completed ({nested} nodes), "
                 f"L={G1_L_MS} ms, window {G1_WINDOW} (Python fetch_all)")
        target = f"requests <= 1.1x {fewest}; <= 1.2x floor"
        if m.error or not m.runs:
            return [failed_row("G1", label, m, target)]
        floor = math.ceil(fewest / G1_WINDOW) * G1_L_MS / 1000.0
        ratio = m.median() / floor
        requests = max(m.values("server_requests") or [0])
        return [fill_counts(Row("G1", label, sheaf=secs(m.median()), floor=secs(floor), ratio=f"{ratio:.2f}x",
                                target=target, met=yes(ratio <= 1.2 and requests <= 1.1 * fewest)), m)]

    def watch_row(self, *arguments: str) -> Tuple[Optional[dict], str]:
        """bench/watch_rows.py against the benchmark's server: its JSON, or why there is none."""
        b = self.b
        try:
            done = subprocess.run([sys.executable, str(WATCH_ROWS), *arguments, b.server.base], env=b.py_env,
                                  capture_output=True, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return None, "timed out"
        if done.returncode != 0:
            return None, done.stderr.decode(errors="replace").strip().splitlines()[-1:][0] if done.stderr else "failed"
        return json.loads(done.stdout.decode().strip().splitlines()[-1]), ""

    def W1(self) -> List[Row]:
        """sheaf watch --every 1 while 10 items a second are added: how long each takes to be in the file."""
        row, error = self.watch_row("delay", "--rate", str(W1_RATE), "--seconds", str(W1_SECONDS), "--every", str(W1_EVERY))
        label = (f"sheaf watch --every {W1_EVERY} -o FILE, {W1_RATE} inserts a second for {W1_SECONDS} s, Stripe-shaped "
                 "(same-second bursts): delay from insert to FILE; peer: a requests poll loop, created[gte]")
        target = "p95 <= 2 s; every item once"
        if row is None:
            return [Row("W1", label, sheaf=f"failed: {error}", target=target, met="no")]
        mine, theirs = row["sheaf"], row["peer"]
        once = mine["written"] == mine["inserted"] and mine["twice"] == 0 and mine["exit"] == 0
        return [Row("W1", label, sheaf=f"p95 {mine['p95']:.2f} s (p50 {mine['p50']:.2f}, max {mine['max']:.2f})",
                    floor=f"peer p95 {theirs['p95']:.2f} s (p50 {theirs['p50']:.2f})",
                    ratio=f"{mine['p95'] / theirs['p95']:.2f}x" if theirs["p95"] else "-", target=target,
                    met=yes(mine["p95"] <= 2.0 and once), runs="1",
                    requests=f"{mine['written']}/{mine['inserted']} items, {mine['twice']} twice")]

    def W2(self) -> List[Row]:
        """An idle hour of polls (720 at --every 5), back to back: requests a poll, with and without the cache."""
        row, error = self.watch_row("idle", "--polls", str(W2_POLLS))
        label = f"an idle watch: {W2_POLLS} polls of an unchanged list (an hour at --every 5, not slept), plain / --cache"
        target = "<= 1 request a poll"
        if row is None:
            return [Row("W2", label, sheaf=f"failed: {error}", target=target, met="no")]
        plain, cached = row["plain"]["requests"] / W2_POLLS, row["cache"]["requests"] / W2_POLLS
        return [Row("W2", label, sheaf=f"{plain:.2f} / {cached:.2f} requests a poll",
                    floor=f"{row['cache']['not_modified']} of {row['cache']['requests']} answered 304", target=target,
                    met=yes(plain <= 1 and cached <= 1 and row["plain"]["items"] == 0 and row["cache"]["items"] == 0),
                    runs="1", requests=f"{row['plain']['requests']} / {row['cache']['requests']}")]

    def M3(self) -> List[Row]:
        b = self.b
        b.measure(b.c_spec("C stream keep1 P5", "stream", self.p5, 1, keep=1, warmup=1))
        m = b.results["C stream keep1 P5"]
        label = "bytes handed to snapshot callbacks / the list's JSON (P5, C, keep_items 1)"
        if m.error or not m.runs:
            return [failed_row("M3", label, m)]
        r = m.runs[0]
        ratio = r["delta_bytes"] / r["prefix_bytes"]
        return [fill_counts(Row("M3", label, sheaf=f"{r['delta_bytes'] / 1e6:.2f} MB",
                                floor=f"{r['prefix_bytes'] / 1e6:.2f} MB", ratio=f"{ratio:.3f}x",
                                target="<= 1.1x", met=yes(ratio <= 1.1)), m)]


# ---- main ----------------------------------------------------------------------------------------

def machine() -> str:
    mem = "?"
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    cpu = platform.processor() or ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu}), {mem} RAM, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def ensure_driver(bench: Bench, args) -> None:
    source = ROOT / "bench" / "sheaf_bench.c"
    stale = (not os.path.exists(bench.driver)
             or os.path.getmtime(bench.driver) < os.path.getmtime(source))
    if stale and not args.driver:
        sys.stderr.write(f"building {bench.driver} (cmake --build {args.build_dir} --target sheaf_bench)\n")
        if not (Path(args.build_dir) / "build.ninja").exists() and not (Path(args.build_dir) / "Makefile").exists():
            subprocess.run(["cmake", "-S", str(ROOT), "-B", args.build_dir, "-G", "Ninja",
                            "-DCMAKE_BUILD_TYPE=Release"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", args.build_dir, "--target", "sheaf_bench"], check=True,
                       stdout=subprocess.DEVNULL)
    if not os.access(bench.driver, os.X_OK):
        raise SystemExit(f"no benchmark driver at {bench.driver}; build it with "
                         f"cmake --build {args.build_dir} --target sheaf_bench")


def tree_state() -> str:
    """The source tree's commit, and whether Sources/ or include/ differ from it."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              timeout=30).stdout.decode().strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "Sources", "include"],
                               capture_output=True, timeout=30).stdout.decode().strip()
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return f"{head}{' + uncommitted changes in Sources/include' if dirty else ''}"


def check_python(bench: Bench) -> None:
    try:
        r = subprocess.run([sys.executable, "-c", "import sheaf, sys; sys.stdout.write(sheaf.library_version())"],
                           env=bench.py_env, capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        bench.python_ok = "import sheaf timed out"
        return
    if r.returncode != 0:
        bench.python_ok = "import sheaf failed: " + r.stderr.decode(errors="replace").strip().splitlines()[-1]
    else:
        bench.lib_version = "libsheaf " + r.stdout.decode()
    if importlib.util.find_spec("requests") is None:
        bench.notes.append("requests is not installed: the baselines use urllib (a connection per request)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Sheaf benchmarks (BENCHMARKS.md): prints one table.")
    p.add_argument("--runs", type=int, default=5, help="measured runs per scenario, median quoted (default 5; "
                   f"serial 10-second walks use at most {SLOW_RUNS})")
    p.add_argument("--only", default="", help="comma-separated ids: " + ",".join(ALL_IDS))
    p.add_argument("--quick", action="store_true",
                   help="a fast smoke run: 1 run each, no warm-up of L=50 lists, serial walks over 40 pages, "
                        "streaming memory at 500 / 5,000 pages")
    p.add_argument("--build-dir", default=str(ROOT / "build"))
    p.add_argument("--driver", default=None, help="the C driver (default BUILD_DIR/bench/sheaf_bench)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--results", default=None, metavar="FILE",
                   help="where to save the run as JSON (default BUILD_DIR/bench-results/run-<date>-<time>.json)")
    p.add_argument("--charts", default=None, metavar="DIR",
                   help="also draw the run as bar charts, an SVG per scenario id, into DIR (needs matplotlib: "
                        "bench/charts.py)")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error("--runs must be >= 1")
    runs = 1 if args.quick else args.runs
    ids = [s.strip().upper() for s in args.only.split(",") if s.strip()] or ALL_IDS
    unknown = [i for i in ids if i not in ALL_IDS]
    if unknown:
        p.error(f"unknown ids: {', '.join(unknown)} (known: {', '.join(ALL_IDS)})")

    bench = Bench(args)
    ensure_driver(bench, args)
    if not os.path.exists(bench.built_library):
        raise SystemExit(f"no library at {bench.built_library}: build it with cmake --build {args.build_dir}")
    bench.snapshot_library()
    try:
        check_python(bench)
    except BaseException:
        bench.cleanup()
        raise
    rows: List[Row] = []
    started = time.monotonic()
    started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    interrupted = False
    try:
        bench.server.start()
        scen = Scenarios(bench, runs, args.quick)
        for i in ids:
            bench.progress(f"--- {i}")
            rows += getattr(scen, i)()
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bench.kill_child()
        bench.server.stop()
        bench.cleanup()

    tree = tree_state()
    seconds = time.monotonic() - started
    print(f"Sheaf benchmarks (BENCHMARKS.md) - {bench.lib_version}: {bench.built_library} built {bench.library_mtime}, "
          f"sha256 {bench.library_sha}, tree {tree}")
    print(f"Machine: {machine()}")
    print(f"Loopback server: Tests/server/api_server.py --cache-pages (keep-alive, Nagle off). "
          f"Medians of {runs} run(s) per row ({'quick' if args.quick else f'serial 10 s walks: {min(runs, SLOW_RUNS)}'}), "
          f"each in a fresh process; {seconds:.0f} s in all.")
    print()
    print_table(rows)
    notes = list(bench.notes)
    for key, m in bench.results.items():
        if m.wrong:
            notes.append(f"{key}: {len(m.wrong)} run(s) gave a wrong list and no time; the first: {m.wrong[0]}")
    if bench.over_window:
        notes.append("in some run the server saw more requests in flight than the client's window (it counts a "
                     "request from reading it to just before writing the answer); the transport's own count is "
                     "shown where there is one")
    if bench.python_ok:
        notes.append(f"Python rows not run: {bench.python_ok}")
    if interrupted:
        notes.append("INTERRUPTED: the table holds the scenarios finished before Ctrl-C")
    for n in notes:
        print(f"note: {n}")
    sys.stdout.flush()
    results = {
        "format": "sheaf-bench-results/1",
        "command": " ".join(["python3", "bench/run.py", *(sys.argv[1:] if argv is None else argv)]),
        "started": started_at, "seconds": round(seconds, 1),
        "library": f"{bench.lib_version} (sha256 {bench.library_sha}, built {bench.library_mtime})",
        "tree": tree, "machine": machine(), "runs": runs, "quick": args.quick, "ids": ids,
        "interrupted": interrupted,
        "rows": [asdict(r) for r in rows], "notes": notes,
        "measurements": {key: {"runs": m.runs, "wrong": m.wrong, "error": m.error} for key, m in bench.results.items()},
    }
    results_path = save_results(results, args)
    if args.charts:
        draw_charts(results_path, args)
    bad = any(r.met == "NO" for r in rows)
    return 130 if interrupted else (1 if bad else 0)


def save_results(results: dict, args) -> Path:
    """Writes the run as JSON (what bench/charts.py reads) and says where, on stderr."""
    path = Path(args.results) if args.results else (
        Path(args.build_dir) / "bench-results" / time.strftime("run-%Y%m%d-%H%M%S.json"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, default=str) + "\n")
    sys.stderr.write(f"results: {path}\n")
    return path


def draw_charts(results_path: Path, args) -> None:
    """bench/charts.py on the saved run: in this interpreter when it has matplotlib, else with
    build/bench-venv's python when that has it, else skipped with one line saying so."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import charts
    if charts.available() is None:
        try:
            for path in charts.draw(charts.load(results_path), Path(args.charts),
                                    log=lambda line: sys.stderr.write(line + "\n")):
                sys.stderr.write(f"chart: {path}\n")
        except Exception as error:      # a chart is a by-product: the table stands without it
            sys.stderr.write(f"charts: failed: {type(error).__name__}: {error}\n")
        return
    for venv in dict.fromkeys([Path(args.build_dir) / "bench-venv", ROOT / "build" / "bench-venv"]):
        python = venv / "bin" / "python"
        if python.exists() and subprocess.run([str(python), "-c", "import matplotlib"],
                                              capture_output=True).returncode == 0:
            done = subprocess.run([str(python), str(Path(charts.__file__)), str(results_path), args.charts],
                                  capture_output=True, text=True)
            sys.stderr.write(done.stderr)
            for line in done.stdout.splitlines():
                sys.stderr.write(f"chart: {line}\n")
            if done.returncode != 0:
                sys.stderr.write(f"charts: failed: {python} bench/charts.py exited {done.returncode}\n")
            return
    sys.stderr.write(f"charts: skipped: {charts.MISSING}\n")


if __name__ == "__main__":
    sys.exit(main())
