"""What the engine modules (sheaf.spark, sheaf.ray, sheaf.dask) share: a list read as partitions by
tasks that each run one on a client of their own.

The driver plans the partitions (:meth:`ListRead.plan`, one read of page one); each task gets a
:class:`ListRead` and one :class:`~sheaf.Partition`, both plain values, and reads the partition
as Arrow. No credential is in either: a task reads its token from its own process's environment
(``token_env``, ``SHEAF_TOKEN`` by default) when it makes its client, so a plan, a task's
arguments, a pickle or an engine's log never hold one. A partition that fails is run again whole
by the engine (its rows are discarded with the failed task), never resumed half-way.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, List, Mapping, Optional, Tuple, Union
from urllib.parse import urlsplit

from .arrow import require_pyarrow
from .client import Client
from .description import Description
from .errors import CredentialError, Result, UsageError
from .partition import Partition

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import pyarrow

#: The environment variable a task reads its bearer token from, unless told another.
DEFAULT_TOKEN_ENV = "SHEAF_TOKEN"

#: The sheaf.Client options a read may set for its tasks' clients: plain values, no credential.
CLIENT_OPTIONS = frozenset({
    "concurrency", "adaptive_window", "max_concurrency", "max_pages", "max_body_bytes", "max_attempts",
    "retry_base", "retry_max", "timeout", "connect_timeout", "max_redirects", "verify", "cert", "http_version",
})

#: The clients a process keeps for the reads it runs (see `ListRead.client`): at most this many,
#: the least recently used closed first.
KEPT_CLIENTS = 4

#: The rows an engine's batch holds at least (`ListRead.batches`), as Spark's own Arrow batches
#: do (spark.sql.execution.arrow.maxRecordsPerBatch).
BATCH_ROWS = 10_000


class _KeptClients:
    """A process's clients for engine reads, one per (base URL, token, client options), so that
    the partitions a worker reads one after another run on one client: the second starts with
    the window the first learnt and asks a window ahead of its page one (the origin has answered
    one on that client), instead of ramping from the start again. Forgotten in a forked child
    (the parent's client is the parent's), never shared across processes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._clients: "OrderedDict[Tuple[Any, ...], Client]" = OrderedDict()

    def get(self, key: Tuple[Any, ...], make: Callable[[], Client]) -> Client:
        evicted: List[Client] = []
        with self._lock:
            if self._pid != os.getpid():
                self._pid, self._clients = os.getpid(), OrderedDict()
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = make()
                while len(self._clients) > KEPT_CLIENTS:
                    evicted.append(self._clients.popitem(last=False)[1])
            self._clients.move_to_end(key)
        for old in evicted:
            old.close()
        return client


_KEPT = _KeptClients()


#: Headers that carry credentials: refused in a read's headers, which every task's arguments hold.
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})


def require(module: str, extra: str, engine: str) -> Any:
    """`module` imported, or an ImportError naming the extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"sheaf.{extra} needs {engine} ({module} is not importable: {error}): "
                          f"pip install 'sheaf[{extra}]'", name=module) from error


def description_of(value: Union[None, str, Description, Mapping[str, Any]]) -> Optional[str]:
    """A description given as a :class:`~sheaf.Description`, its JSON form (text or dict) or a
    preset's name, as the library's JSON text (None: detected from page one)."""
    import json

    if value is None or value == "":
        return None
    if isinstance(value, Description):
        return value.to_json()
    if isinstance(value, Mapping):
        return Description(json=json.dumps(dict(value))).to_json()
    if isinstance(value, str):
        text = value.strip()
        return Description(json=text).to_json() if text.startswith("{") else Description(preset=text).to_json()
    raise UsageError(Result.INVALID_ARGUMENT, "description must be a sheaf.Description, its JSON form or a preset's "
                                              f"name, not {type(value).__name__}")


def headers_of(value: Union[None, str, Mapping[str, str]]) -> Tuple[Tuple[str, str], ...]:
    """Headers given as a mapping or a JSON object's text, as pairs; credentials refused (they
    would travel in every task's arguments: the token comes from ``token_env``)."""
    import json

    if value is None or value == "":
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as error:
            raise UsageError(Result.INVALID_ARGUMENT, f"headers must be a JSON object: {error}") from None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise UsageError(Result.INVALID_ARGUMENT, "headers must be a JSON object of strings")
    for name in value:
        if name.lower() in CREDENTIAL_HEADERS:
            raise UsageError(Result.INVALID_ARGUMENT, f"headers may not carry a credential ({name}): every task's "
                                                      "arguments hold them; each task reads its token from the "
                                                      "environment variable named by token_env")
    return tuple(sorted(value.items()))


@dataclass(frozen=True)
class ListRead:
    """A list as the engines read it: where it is, how it paginates and how a task's client is
    made. A plain value that pickles small and holds no credential."""

    base_url: str
    path: str
    description: Optional[str] = None
    headers: Tuple[Tuple[str, str], ...] = ()
    token_env: str = DEFAULT_TOKEN_ENV
    client_options: Tuple[Tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, url: str, description: Union[None, str, Description, Mapping[str, Any]] = None,
           headers: Union[None, str, Mapping[str, str]] = None, token_env: Optional[str] = None,
           client_options: Optional[Mapping[str, Any]] = None) -> "ListRead":
        """Checks and normalises what a user gives an engine (UsageError naming what is wrong)."""
        if not isinstance(url, str) or not url:
            raise UsageError(Result.INVALID_ARGUMENT, "url must be the list's URL (http:// or https://)")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(Result.INVALID_ARGUMENT, f"url must be an http:// or https:// URL, not {url!r}")
        if "@" in parts.netloc:
            raise UsageError(Result.INVALID_ARGUMENT, "url may not carry credentials (user:password@): each task "
                                                      "reads its token from the environment variable named by token_env")
        path = parts.path or "/"
        if parts.query:
            path += f"?{parts.query}"
        options = dict(client_options or {})
        unknown = sorted(set(options) - CLIENT_OPTIONS)
        if unknown:
            raise UsageError(Result.INVALID_ARGUMENT, f"client option(s) not allowed here: {', '.join(unknown)} "
                                                      f"(allowed: {', '.join(sorted(CLIENT_OPTIONS))}; the token comes "
                                                      "from token_env)")
        token_env = token_env or DEFAULT_TOKEN_ENV
        if not isinstance(token_env, str) or not token_env.replace("_", "").isalnum():
            raise UsageError(Result.INVALID_ARGUMENT, f"token_env must name an environment variable, not {token_env!r}")
        return cls(f"{parts.scheme}://{parts.netloc}", path, description_of(description), headers_of(headers),
                   token_env, tuple(sorted(options.items())))

    def client(self) -> Client:
        """This process's client for the read, its token read from this process's environment
        now: kept for the process's next partitions of the list's origin (`_KeptClients`), so
        not to be closed by its user."""
        token = os.environ.get(self.token_env)
        if token is None and self.token_env != DEFAULT_TOKEN_ENV:
            raise CredentialError(Result.CREDENTIAL,
                                  f"the environment variable {self.token_env} (token_env) is not set in this "
                                  f"process (pid {os.getpid()}): each worker reads its token from its own environment")
        key = (self.base_url, token or None, self.client_options)
        return _KEPT.get(key, lambda: Client(self.base_url, token or None, **dict(self.client_options)))

    def _description(self) -> Optional[Description]:
        return None if self.description is None else Description(json=self.description)

    def plan(self, n: int, at_once: Optional[int] = None) -> List[Partition]:
        """Up to `n` partitions of the list (reads its first page), the window shared among
        `at_once` of them (the engine's task slots; None: all of them)."""
        return self.client().partitions(self.path, n, self._description(), headers=dict(self.headers) or None,
                                        at_once=at_once)

    def first_page_schema(self) -> "pyarrow.Schema":
        """The schema of the list's first page as Arrow (what an engine declares when told none)."""
        table = self.client().fetch_arrow(self.path, self._description(), headers=dict(self.headers) or None,
                                          max_pages=1)
        return table.schema.remove_metadata()

    def batches(self, partition: Partition, schema: "pyarrow.Schema",
                rows: int = BATCH_ROWS) -> Iterator["pyarrow.RecordBatch"]:
        """The partition's rows under `schema` (see :func:`conformed`) as record batches of at
        least `rows` rows each but the last: its snapshots, joined as they arrive. An engine
        pays for each batch it is handed (Spark about 4 ms), and a snapshot may be one page."""
        pa, _ = require_pyarrow()
        held: List["pyarrow.RecordBatch"] = []
        count = 0
        with self.client().stream_partition_batches(partition, schema=_readable(schema),
                                                    headers=dict(self.headers) or None) as batches:
            for batch in batches:
                held.append(conformed(batch, schema))
                count += batch.num_rows
                if count >= rows:
                    yield from pa.Table.from_batches(held, schema).combine_chunks().to_batches()
                    held, count = [], 0
        if held:
            yield from pa.Table.from_batches(held, schema).combine_chunks().to_batches()

    def table(self, partition: Partition, schema: Optional["pyarrow.Schema"] = None) -> "pyarrow.Table":
        """The partition's rows as one table; under `schema` exactly when one is given."""
        table = self.client().fetch_partition_arrow(partition, schema=_readable(schema),
                                                    headers=dict(self.headers) or None)
        return table if schema is None else conformed(table, schema)


def at_once_of(value: Any, name: str = "at_once") -> Optional[int]:
    """The partitions an engine runs at the same time, as given (None: not said), checked."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(Result.INVALID_ARGUMENT, f"{name} must be 1 or more, not {value!r}")
    return value


def _readable(schema: Optional["pyarrow.Schema"]) -> Optional["pyarrow.Schema"]:
    """`schema` as the JSON reader takes it: every field nullable (a page may lack a field)."""
    if schema is None:
        return None
    pa, _ = require_pyarrow()
    return pa.schema([field.with_nullable(True) for field in schema])


def conformed(data: Any, schema: "pyarrow.Schema") -> Any:
    """`data` (a RecordBatch or Table) with exactly `schema`'s columns, in its order and types:
    a field no item of it held is all null, a field `schema` does not name is left out."""
    pa, _ = require_pyarrow()
    columns = []
    for field in schema:
        index = data.schema.get_field_index(field.name)
        column = data.column(index) if index >= 0 else pa.nulls(data.num_rows, field.type)
        if column.type != field.type:
            column = column.cast(field.type)
        columns.append(column)
    if isinstance(data, pa.RecordBatch):
        return pa.RecordBatch.from_arrays(columns, schema=schema)
    return pa.Table.from_arrays(columns, schema=schema)


__all__: List[str] = []
