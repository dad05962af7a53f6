"""A list as a Spark DataFrame: a PySpark 4 Python data source, short name ``sheaf``.

    import sheaf.spark

    sheaf.spark.register(spark)
    things = (spark.read.format("sheaf")
              .option("url", "https://api.example.com/v1/things")
              .option("partitions", 8)
              .option("at_once", spark.sparkContext.defaultParallelism)
              .load())

The driver plans the partitions (:meth:`sheaf.Client.partitions`: one read of page one); each
Spark task runs one partition on a client of its own and yields its rows as
``pyarrow.RecordBatch`` es of 10,000 rows or more (its snapshots joined: Spark pays for each batch,
and a snapshot may be one page). A task that fails is run again whole by Spark (``spark.task.maxFailures``;
``local[N, F]`` in local mode).

Options (strings, as Spark passes them):

- ``url`` (or ``load(url)``): the list's URL, query included.
- ``partitions``: how many partitions to plan (default 8); a list whose pages are not addressed
  (next links, cursors) is one.
- ``at_once``: how many of them Spark runs at the same time (its task slots: the executors'
  cores, ``spark.sparkContext.defaultParallelism``); the window (``max_concurrency``) is shared
  among those. Not given: among all the partitions, which is safe and slower when fewer run at
  once (8 partitions on ``local[2]``: a quarter of the window in flight).
- ``description``: how the list paginates: a preset's name (``github``) or the description JSON
  (what ``sheaf get --explain --format json`` prints); detected from page one when not given.
- ``headers``: a JSON object of extra headers (no credential: ``Authorization`` is refused).
- ``token_env``: the environment variable each process reads its bearer token from (default
  ``SHEAF_TOKEN``); the token is in no option, plan, task or log. Set it in the driver's and
  executors' environment (``spark.executorEnv.NAME`` on a cluster).
- client options: ``concurrency``, ``max_concurrency`` (the window the partitions share), ``adaptive_window``,
  ``max_attempts``, ``timeout``, ``connect_timeout``, ``retry_base``, ``retry_max``, ``max_pages``,
  ``max_body_bytes``, ``max_redirects``, ``verify``, ``cert``, ``http_version``, as
  :class:`sheaf.Client` takes them.

The schema is the one given with ``.schema(...)`` (values converted to it, such as ISO strings to
timestamps), else the first page's, read as :meth:`sheaf.Client.fetch_arrow` reads it: a field
that first appears after page one is then left out (give a schema to keep it).

A stream of what is new (``spark.readStream``), each item once into a sink with a checkpoint:

    stream = (spark.readStream.format("sheaf")
              .option("url", "https://api.stripe.com/v1/charges?limit=100")
              .option("description", "stripe").option("until", "/created=0").option("id", "/id")
              .schema("id string, amount long, currency string, created long")
              .load())
    (stream.writeStream.option("checkpointLocation", "/checkpoints/charges")
     .trigger(availableNow=True).toTable("charges"))

A list that syncs is polled (:meth:`sheaf.Client.watch`): ``until`` for a newest-first list,
``since_param`` and ``since_field`` for a filter the server applies (including its value), and
an identity (``id``). Spark's offsets are the polls' offsets: ``{"sheaf_watch": 1, "offset":
{"list", "field", "value", "seen"}}`` (the greatest value of the sync field delivered and the
identities of the items at it; ``"offset": null`` for the start the description names). An
offset holds the list's redacted URL and values of the items, never a credential.

- A list with a range filter on the until field (the ``stripe`` preset's ``created[gte]`` and
  ``created[lt]``, or a description's ``split``, of whole numbers): ``latestOffset`` reads the
  first page alone (one request) and ends the batch at its greatest value, with the identities
  of the items there; ``partitions`` cuts the batch into up to ``partitions`` ranges of equal
  width of the field (newest first) and each task fetches its range on a client of its own,
  its requests bounded by the filter and its items chosen by the offsets at both ends (a server
  that ignores the filter costs more requests, never an item). Equal widths spread a list that
  grows steadily; a first batch over a long backlog is better read by ``spark.read``. When the
  first page cannot tell the batch's end (every item on it at one value, more pages after it),
  the batch is a poll, as below.
- Otherwise each micro-batch is one poll, made in the driver (Spark's Python process of the
  query): ``latestOffset`` polls from the end of the batch before and keeps the items it
  fetched; ``partitions`` splits those items into up to ``partitions`` Spark partitions
  (contiguous runs of the list's order), and a task only converts the rows it was handed.
- An idle poll costs one request and plans no batch. A first batch reads the whole list down to
  ``until``'s START (or the whole list, for ``since_param`` without a value): start it near now
  (``/created=1735689600``) on a long list.
- Exactly once: Spark writes a batch's end offset to its checkpoint before it runs the batch,
  and marks it done after the sink committed it. A query restarted from the checkpoint runs an
  unfinished batch again: ``partitions`` then reads exactly that range again, ``poll(start,
  through=end)``, or its ranges (what the server still holds of it: an item deleted meanwhile is not in it, and an
  item the server made visible late with a created value inside the range is), and goes on from
  its end. With a sink that commits per batch (files, Delta, a table; ``foreachBatch`` writing by
  batch id) every item is in it once.
- Triggers: processing time (a poll each trigger) and ``availableNow=True`` (the first poll as
  the query starts is its target: the query ends after it; an item added later waits for the next
  run). ``Trigger.Once`` is one poll too. No read limit (``maxRowsPerTrigger`` and the like):
  a batch is a whole poll.
- A poll that fails (after the client's retries) fails the query; restart it from its checkpoint.

Options of a stream (beside ``url``, ``description``, ``headers``, ``token_env`` and the client
options above; ``at_once`` has no effect: a range is a cursor's walk, a request in flight at a
time, so a batch has at most ``partitions`` requests in flight):

- ``until``: ``PTR=START``: a newest-first list, each poll read down to what the last delivered,
  by the field PTR (``/created=0``: the whole list the first time). START is JSON if it parses
  (a number), else a string (an ISO-8601 time).
- ``since_param`` and ``since_field``: a filter the server applies, including its value
  (``created[gte]`` and ``/created``; GitHub's ``since`` and ``/updated_at``): each poll sends the
  greatest value delivered. The first poll sends none (the whole list) unless the description's
  JSON names a ``since`` value.
- ``id``: the pointer of each item's identity (default ``/id``, unless the description names one).
- ``partitions``: the ranges (or parts) a batch is cut into, a Spark partition each (default 2).

The schema is the one given (``.schema(...)``), else the list's first page's, as for a batch read
(one request when the query is defined): give one for a list that may be empty when the stream
is defined (a first page with no item has no schema to read, and the stream refuses it), and for a
field that may first appear later. Rows are converted under it as a batch read converts them.

The until and since options are for ``spark.readStream``; a batch read refuses them.

Needs pyspark 4 and pyarrow: ``pip install 'sheaf[spark]'``. The streaming reader is tested
with pyspark 4.3 (``latestOffset(start, limit)``, ``SupportsTriggerAvailableNow``); on pyspark
4.0 and 4.1 (``latestOffset()``, Spark's own wrapper for ``availableNow``) it polls from the
latest offset it knows, else from the start of the list.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from ._engines import CLIENT_OPTIONS, DEFAULT_TOKEN_ENV, ListRead, _readable, conformed, require
from .errors import CredentialError, Result, UsageError

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import pyarrow

    from .client import Client
    from .watch import Poll

try:   # the classes below derive from pyspark's when it is there; without it they say how to install it
    from pyspark.sql.datasource import DataSource as _DataSource
    from pyspark.sql.datasource import DataSourceReader as _DataSourceReader
    from pyspark.sql.datasource import DataSourceStreamReader as _DataSourceStreamReader
    from pyspark.sql.datasource import InputPartition as _InputPartition
except ImportError:  # pragma: no cover - depends on the environment
    _DataSource = _DataSourceReader = _DataSourceStreamReader = _InputPartition = object   # type: ignore[assignment,misc]

try:   # pyspark 4.2 and later: Trigger.AvailableNow asks the source for its target
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow as _SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover - depends on the environment
    class _SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """pyspark before 4.2 (or none): Spark wraps a source for Trigger.AvailableNow itself."""

#: The data source's short name: ``spark.read.format("sheaf")``.
NAME = "sheaf"

#: Partitions planned when the ``partitions`` option is not given.
DEFAULT_PARTITIONS = 8

#: The Spark partitions a stream's batch is split into when the ``partitions`` option is not given.
DEFAULT_STREAM_PARTITIONS = 2

#: The version of the stream's offsets (``{"sheaf_watch": 1, "offset": ...}``).
OFFSET_VERSION = 1

#: The polls a stream reader keeps in the driver for the batches Spark plans from them, at most
#: (one is planned after each poll; an older one, if ever asked for, is read again: ``through``).
KEPT_POLLS = 4

#: How each client option's text is read.
_OPTION_TYPES: Dict[str, Any] = {
    "concurrency": int, "max_concurrency": int, "max_pages": int, "max_body_bytes": int, "max_attempts": int,
    "max_redirects": int, "retry_base": float, "retry_max": float, "timeout": float, "connect_timeout": float,
    "adaptive_window": bool, "verify": bool, "cert": str, "http_version": str,
}

_READ_OPTIONS = frozenset({"url", "path", "partitions", "at_once", "description", "headers", "token_env"})

#: The options of a stream only (spark.readStream): how the list syncs.
_STREAM_OPTIONS = frozenset({"until", "since_param", "since_field", "id"})


def register(spark: Any) -> None:
    """Registers the data source with the session `spark` (``spark.dataSource.register``), so that
    ``spark.read.format("sheaf")`` reads lists.

    Raises:
        ImportError: pyspark 4 or pyarrow is not installed (``pip install 'sheaf[spark]'``).
    """
    _require()
    spark.dataSource.register(ListDataSource)


def _require() -> None:
    require("pyspark.sql.datasource", "spark", "pyspark 4")
    require("pyarrow", "spark", "pyarrow")


def _flag(text: str, name: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise UsageError(Result.INVALID_ARGUMENT, f"option {name} must be true or false, not {text!r}")


def _whole_option(given: Mapping[str, Any], name: str, default: Optional[int]) -> Optional[int]:
    """Option `name` as a whole number of 1 or more (`default` when not given)."""
    if name not in given:
        return default
    try:
        value = int(given[name])
    except ValueError:
        raise UsageError(Result.INVALID_ARGUMENT, f"option {name} must be a whole number, not {given[name]!r}") from None
    if value < 1:
        raise UsageError(Result.INVALID_ARGUMENT, f"option {name} must be 1 or more, not {value}")
    return value


def _options(options: Mapping[str, Any]) -> Tuple[ListRead, int, Optional[int]]:
    """The list to read, the partitions to plan and how many run at once, from the data
    source's options."""
    given = {str(key).lower(): value for key, value in options.items()}
    known = _READ_OPTIONS | CLIENT_OPTIONS | _STREAM_OPTIONS
    unknown = sorted(set(given) - known)
    if unknown:
        raise UsageError(Result.INVALID_ARGUMENT, f"unknown option(s) of the sheaf data source: {', '.join(unknown)} "
                                                  f"(known: {', '.join(sorted(known - {'path'}))})")
    url = given.get("url") or given.get("path")
    if not url:
        raise UsageError(Result.INVALID_ARGUMENT, 'the sheaf data source needs the list\'s URL: .option("url", URL)')
    client_options = {}
    for name in CLIENT_OPTIONS & set(given):
        read = _OPTION_TYPES[name]
        text = str(given[name])
        try:
            client_options[name] = _flag(text, name) if read is bool else read(text)
        except ValueError:
            raise UsageError(Result.INVALID_ARGUMENT, f"option {name} must be a {read.__name__}, not {text!r}") from None
    partitions = _whole_option(given, "partitions", DEFAULT_PARTITIONS)
    return (ListRead.of(str(url), given.get("description"), given.get("headers"), given.get("token_env"),
                        client_options), partitions or DEFAULT_PARTITIONS, _whole_option(given, "at_once", None))


class ListDataSource(_DataSource):  # type: ignore[misc,valid-type]
    """The ``sheaf`` data source: a paginated list as a DataFrame, a Spark partition per Sheaf
    partition (see the module's documentation for the options)."""

    @classmethod
    def name(cls) -> str:
        """The short name, ``sheaf``."""
        return NAME

    def __init__(self, options: Dict[str, str]) -> None:
        _require()
        super().__init__(options)
        self._read, self._partitions, self._at_once = _options(options)
        given = {str(key).lower(): value for key, value in options.items()}
        self._sync = _sync_parts(given)
        self._stream_partitions = _whole_option(given, "partitions", DEFAULT_STREAM_PARTITIONS) or DEFAULT_STREAM_PARTITIONS

    def schema(self) -> Any:
        """The first page's schema (when ``.schema(...)`` gives none), as a Spark ``StructType``;
        a field that held only nulls there is a string."""
        from pyspark.sql.pandas.types import from_arrow_schema

        import pyarrow as pa

        arrow = self._read.first_page_schema()
        arrow = pa.schema([field.with_type(pa.string()) if pa.types.is_null(field.type) else field
                           for field in arrow])
        return from_arrow_schema(arrow, prefer_timestamp_ntz=False)

    def reader(self, schema: Any) -> "ListReader":
        """A reader of the list under `schema` (a Spark ``StructType``)."""
        from pyspark.sql.pandas.types import to_arrow_schema

        if self._sync is not None:
            raise UsageError(Result.INVALID_ARGUMENT, "options until, since_param, since_field and id are for a stream "
                                                      "(spark.readStream: what is new, poll by poll); a batch read "
                                                      "(spark.read) reads the whole list: leave them out")
        # The Arrow schema Spark checks each batch against (its own conversion, UTC timestamps).
        return ListReader(self._read, self._partitions, to_arrow_schema(schema, timezone="UTC"), self._at_once)

    def streamReader(self, schema: Any) -> "ListStreamReader":
        """A stream of what is new in the list under `schema` (a Spark ``StructType``): a poll a
        micro-batch (see the module's documentation). UsageError for a list that does not sync
        as described, or a schema with no field."""
        from pyspark.sql.pandas.types import to_arrow_schema

        if not len(schema.fields):
            raise UsageError(Result.INVALID_ARGUMENT, "the sheaf stream needs a schema: the list's first page held no "
                                                      "item to read one from; give it with "
                                                      ".schema(\"id string, created long\")")
        return ListStreamReader(self._read, self._sync or {}, self._stream_partitions,
                                to_arrow_schema(schema, timezone="UTC"))


class ListReader(_DataSourceReader):  # type: ignore[misc,valid-type]
    """Plans the partitions on the driver and reads each in a task (no credential in either)."""

    def __init__(self, read: ListRead, partitions: int, schema: "pyarrow.Schema", at_once: Optional[int] = None) -> None:
        self._read = read
        self._count = partitions
        self._at_once = at_once
        self._schema = schema

    def partitions(self) -> List[Any]:
        """The list's partitions (:meth:`sheaf.Client.partitions`), each an ``InputPartition``
        whose value is a :class:`sheaf.Partition`."""
        return [_InputPartition(partition) for partition in self._read.plan(self._count, self._at_once)]

    def read(self, partition: Any) -> Iterator["pyarrow.RecordBatch"]:
        """The rows of one partition under the DataFrame's schema, in record batches of 10,000
        rows or more (but the last)."""
        yield from self._read.batches(partition.value, self._schema)


def _sync_parts(given: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """How the list syncs, from a stream's options (``until``, ``since_param`` with
    ``since_field``, ``id``) as :meth:`sheaf.Client.watch` takes it; None when none is given."""
    from .description import loads_exact

    if not _STREAM_OPTIONS & set(given):
        return None
    parts: Dict[str, Any] = {}
    if "until" in given:
        text = str(given["until"])
        pointer, found, start = text.partition("=")
        if not found or not pointer.startswith("/"):
            raise UsageError(Result.INVALID_ARGUMENT, "option until must be PTR=START, a JSON pointer inside each item "
                                                      "and where the first poll stops (\"/created=0\"), not "
                                                      f"{text!r}")
        try:
            value: Any = loads_exact(start)   # a number exactly as written
        except ValueError:
            value = start   # not JSON: the string itself (an ISO-8601 time)
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise UsageError(Result.INVALID_ARGUMENT, f"option until's START must be a number or a string, not {start!r}")
        parts["until"] = (pointer, value)
    if ("since_param" in given) != ("since_field" in given):
        raise UsageError(Result.INVALID_ARGUMENT, "options since_param and since_field go together: the query "
                                                  "parameter of a filter the server applies, including its value "
                                                  "(created[gte], since), and the field it filters by (/created)")
    if "since_param" in given:
        parts["since"] = (str(given["since_param"]), str(given["since_field"]), None)
    if "id" in given:
        parts["id"] = str(given["id"])
    return parts


def _identity(description: Optional[str]) -> Optional[Dict[str, Any]]:
    """The identity signal a description's JSON names ({"source", "where"}), if any."""
    if description is None:
        return None
    try:
        document = json.loads(description)
    except ValueError:
        return None
    signals = document.get("signals") if isinstance(document, dict) else None
    named = signals.get("identity") if isinstance(signals, dict) else None
    return named if isinstance(named, dict) else None


def _exactly(value: Any) -> Any:
    """`value` (from loads_exact) with each non-integer number as the Decimal of its text."""
    from .description import JSONNumber

    if isinstance(value, JSONNumber):
        return Decimal(value.text)
    if isinstance(value, dict):
        return {key: _exactly(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_exactly(item) for item in value]
    return value


def _spark_offset(text: str) -> Dict[str, Any]:
    """A poll's offset (the library's JSON text) as the stream's offset, the dict Spark writes
    to its offset log (as JSON: it must come back as the same offset)."""
    from .description import loads_exact

    offset = json.loads(text)
    if _exactly(loads_exact(json.dumps(offset))) != _exactly(loads_exact(text)):
        raise UsageError(Result.INVALID_ARGUMENT, f"the poll's offset {text[:200]} holds a number with more digits "
                                                  "than a Spark offset keeps (a float's 17): sync by a field of "
                                                  "whole numbers or strings")
    return {"sheaf_watch": OFFSET_VERSION, "offset": offset}


def _poll_offset(offset: Any, what: str) -> Optional[str]:
    """The library's offset (JSON text; None: the start the description names) in a stream's
    offset, checked."""
    if (not isinstance(offset, dict) or offset.get("sheaf_watch") != OFFSET_VERSION or "offset" not in offset
            or not (offset["offset"] is None or isinstance(offset["offset"], dict))):
        raise UsageError(Result.INVALID_ARGUMENT, f"{what} {json.dumps(offset)[:200]} is not an offset of the sheaf "
                                                  f"stream ({{\"sheaf_watch\": {OFFSET_VERSION}, \"offset\": ...}}): "
                                                  "the checkpoint is another source's; give the query a new "
                                                  "checkpointLocation")
    return None if offset["offset"] is None else json.dumps(offset["offset"])


def _key(offset: Any) -> str:
    """An offset as a key: its JSON, keys sorted (Spark hands offsets back as JSON it parsed)."""
    return json.dumps(offset, sort_keys=True)


def _lines(raw: bytes) -> List[bytes]:
    """A poll's items (JSON lines, one an item), each a JSON text."""
    return [line for line in raw.split(b"\n") if line]


def _stream_client(read: ListRead) -> "Client":
    """The stream reader's own client (closed by stop()), its token read from this process's
    environment (``token_env``) now, as a task's is."""
    from .client import Client

    token = os.environ.get(read.token_env)
    if token is None and read.token_env != DEFAULT_TOKEN_ENV:
        raise CredentialError(Result.CREDENTIAL,
                              f"the environment variable {read.token_env} (token_env) is not set in this process "
                              f"(pid {os.getpid()}): the stream's driver reads its token from its own environment")
    return Client(read.base_url, token or None, **dict(read.client_options))


def _range_filter(read: ListRead, parts: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The range filter a stream's batches are split by, read by the tasks (``{"field", "lower",
    "upper"}``, the ends as the description's ``split`` names them), when there is one to use: a
    newest-first list (``until``, a whole-number START) whose description or preset has a split
    on the until field, of whole numbers. None otherwise (a batch is then fetched in the driver)."""
    from .description import presets

    if "until" not in parts or read.description is None:
        return None
    pointer, start = parts["until"]
    if isinstance(start, bool) or not isinstance(start, int):
        return None
    try:
        document = json.loads(read.description)
    except ValueError:
        return None
    if not isinstance(document, dict):
        return None
    split = document.get("split", "inherit")
    if split == "inherit":
        named = presets().get(document.get("preset")) if isinstance(document.get("preset"), str) else None
        split = None if named is None else json.loads(named[1].to_json()).get("split")
    if (not isinstance(split, dict) or split.get("field") != pointer or split.get("order", "newest_first") != "newest_first"
            or split.get("kind") not in (None, "integer")):
        return None
    ends = [split.get("lower"), split.get("upper")]
    if not all(isinstance(end, dict) and isinstance(end.get("param"), str) and isinstance(end.get("inclusive"), bool)
               for end in ends):
        return None
    return {"field": pointer, "lower": dict(ends[0]), "upper": dict(ends[1])}


def _item_at(item: Any, pointer: str) -> Any:
    """The value at JSON pointer `pointer` in a decoded item; None when there is none."""
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(item, dict):
            item = item.get(token)
        elif isinstance(item, list) and token.isdigit() and int(token) < len(item):
            item = item[int(token)]
        else:
            return None
    return item


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class RangePartition(_InputPartition):  # type: ignore[misc,valid-type]
    """A part of a stream's batch that a task fetches: the list between two offsets (`floor`
    exclusive, as a poll starts; `through` inclusive), its requests bounded by the range
    filter's `query` (the values that hold the range; the offsets decide the items, so a server
    that ignores the filter costs requests, not items). No credential."""

    def __init__(self, floor: Optional[str], through: str, query: Tuple[Tuple[str, str], ...], low: int, high: int) -> None:
        super().__init__({"floor": floor, "through": through, "query": query})
        self.low, self.high = low, high

    def __repr__(self) -> str:
        return f"<sheaf.spark.RangePartition {self.low}..{self.high}>"


class ItemsPartition(_InputPartition):  # type: ignore[misc,valid-type]
    """A part of a stream's batch: its items (a JSON array's bytes, in the list's order) and
    how many they are. Its value is the items; no credential."""

    def __init__(self, items: bytes, count: int) -> None:
        super().__init__(items)
        self.count = count

    def __repr__(self) -> str:
        return f"<sheaf.spark.ItemsPartition {self.count} items>"


class ListStreamReader(_SupportsTriggerAvailableNow, _DataSourceStreamReader):  # type: ignore[misc,valid-type]
    """The stream of a list that syncs: a poll a micro-batch, made in the driver, its items split
    among the batch's partitions (see the module's documentation).

    Spark makes one in its planning process (pickled into each task for :meth:`read`: only the
    list, the sync and the schema travel) and one that plans the batches, which makes the client
    and the watch at its first poll and closes them in :meth:`stop`."""

    def __init__(self, read: ListRead, sync: Mapping[str, Any], partitions: int, schema: "pyarrow.Schema") -> None:
        self._read = read
        self._parts = dict(sync)
        named = _identity(read.description)
        if "id" not in self._parts and named is None:
            self._parts["id"] = "/id"
        #: The pointer of each item's identity, as the peek reads it (None: not inside the item).
        self._id = self._parts["id"] if "id" in self._parts else (named["where"] if named.get("source") == "item" else None)
        self._count = partitions
        self._schema = schema
        self._refuse_unless_it_syncs()
        self._split = _range_filter(read, self._parts) if isinstance(self._id, str) else None
        self._start_afresh()

    def _start_afresh(self) -> None:
        self._client: Optional["Client"] = None
        self._watch: Any = None
        #: (start, end) keys -> the items of the poll that went from start to end.
        self._polls: "OrderedDict[Tuple[str, str], List[bytes]]" = OrderedDict()
        self._latest: Optional[Dict[str, Any]] = None   # the latest end offset this reader knows
        self._available_now = False
        self._target: Optional[Dict[str, Any]] = None   # Trigger.AvailableNow's: the first poll's end

    def __getstate__(self) -> Dict[str, Any]:
        # What a task needs for read(): no client, watch or polls (and no credential).
        return {"_read": self._read, "_parts": self._parts, "_count": self._count, "_schema": self._schema,
                "_split": self._split, "_id": self._id}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._start_afresh()

    def _refuse_unless_it_syncs(self) -> None:
        """UsageError unless the list syncs as described (the library says; nothing is sent)."""
        from .client import Client

        with Client(self._read.base_url) as client:
            key = client.sync_key(self._read.path, self._read._description(), **self._parts)
        if key is None:
            raise UsageError(Result.INVALID_ARGUMENT,
                             "the sheaf stream polls a list that syncs, and this one, as described, does not: give "
                             ".option(\"until\", \"/created=0\") for a newest-first list (PTR=START: the field "
                             "each poll reads down to, and where the first poll stops), or "
                             ".option(\"since_param\", \"created[gte]\").option(\"since_field\", \"/created\") "
                             "for a filter the server applies, including its value")

    def _poll(self, start: Dict[str, Any], through: Optional[Dict[str, Any]] = None) -> "Poll":
        """One poll from `start` (through `through`: a range read again), on this reader's watch."""
        begin = _poll_offset(start, "the start offset")
        end = None if through is None else _poll_offset(through, "the end offset")
        if self._watch is None:
            self._watch = self._own_client().watch(self._read.path, self._read._description(),
                                                   headers=dict(self._read.headers) or None, **self._parts)
        return self._watch.poll(begin, through=end, lines=True)

    def _own_client(self) -> "Client":
        if self._client is None:
            self._client = _stream_client(self._read)
        return self._client

    def _peek(self, start: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """The end of the batch from `start` by the list's first page alone (one request): the
        greatest value on it, with the identities of its items at that value (and of those
        `start` saw there). `start` when nothing is new; None when the first page cannot tell
        (every item on it at one value, more pages after it: a poll reads the batch instead)."""
        assert self._split is not None and isinstance(self._id, str)
        field, identity = self._split["field"], self._id
        page = self._own_client().fetch_all(self._read.path, self._read._description(), max_pages=1, split="none",
                                            headers=dict(self._read.headers) or None)
        values = [(_item_at(item, field), _item_at(item, identity)) for item in page]
        if not values:
            return start
        if not all(_whole(value) and (isinstance(key, str) or _whole(key)) for value, key in values):
            return None
        newest = max(value for value, _ in values)
        if not (page.complete or any(value < newest for value, _ in values)):
            return None
        seen = list(dict.fromkeys(key for value, key in values if value == newest))
        begun = start["offset"]
        if begun is None:
            if newest < self._parts["until"][1]:
                return start
        else:
            if not _whole(begun.get("value")) or newest < begun["value"]:
                return start if _whole(begun.get("value")) else None
            if newest == begun["value"]:
                before = list(begun.get("seen") or [])
                if not set(seen) - set(before):
                    return start
                seen = list(dict.fromkeys(before + seen))
        offset = {"list": None if begun is None else begun.get("list"), "field": field, "value": newest, "seen": seen}
        return {"sheaf_watch": OFFSET_VERSION, "offset": offset}

    def _ranges(self, start: Dict[str, Any], end: Dict[str, Any]) -> Optional[List[Any]]:
        """The batch from `start` to `end` as up to ``partitions`` ranges of equal width of the
        field, each a task fetches (RangePartition), newest first; None when it cannot be cut so (no range
        filter, or values that are not whole numbers)."""
        if self._split is None:
            return None
        begun, ended = start["offset"], end["offset"]
        low = self._parts["until"][1] if begun is None else begun.get("value")
        high = ended.get("value")
        if not (_whole(low) and _whole(high)) or high < low:
            return None
        cuts = sorted({low + (high - low) * k // self._count for k in range(1, self._count)} - {high})
        field = self._split["field"]

        def text(offset: Optional[Dict[str, Any]]) -> Optional[str]:
            return None if offset is None else json.dumps({key: value for key, value in offset.items() if key != "list"})

        floors = [text(begun)] + [text({"field": field, "value": cut + 1, "seen": []}) for cut in cuts]
        ceilings = [text({"field": field, "value": cut, "seen": None}) for cut in cuts] + [text(ended)]
        lows, highs = [low] + [cut + 1 for cut in cuts], cuts + [high]
        lower, upper = self._split["lower"], self._split["upper"]
        parts = []
        for floor, ceiling, first, last in zip(floors, ceilings, lows, highs):
            query = ((lower["param"], str(first if lower["inclusive"] else first - 1)),
                     (upper["param"], str(last if upper["inclusive"] else last + 1)))
            parts.append(RangePartition(floor, ceiling, query, first, last))   # type: ignore[arg-type]
        return parts[::-1]   # the list's order: the newest range first

    def initialOffset(self) -> Dict[str, Any]:
        """The start the description names (``until``'s START; the whole list for a since
        filter with no value): ``{"sheaf_watch": 1, "offset": None}``."""
        return {"sheaf_watch": OFFSET_VERSION, "offset": None}

    def latestOffset(self, start: Optional[Dict[str, Any]] = None, limit: Any = None) -> Dict[str, Any]:
        """One poll from `start` (the end of the batch before; pyspark before 4.2 gives none:
        the latest offset this reader knows, else the initial one), its items kept here for the
        batch Spark plans from it; the offset after them. A poll that found nothing new returns
        `start` (no batch). Under Trigger.AvailableNow only the first poll is made: its end is
        the target, returned until Spark has read up to it, and then `start` (the query ends).
        `limit` is not applied: a batch is a whole poll."""
        if start is None:
            start = self._latest if self._latest is not None else self.initialOffset()
        _poll_offset(start, "the start offset")
        if self._target is not None:
            return start if _key(start) == _key(self._target) else self._target
        end = None if self._split is None else self._peek(start)
        if end is None:
            poll = self._poll(start)
            items = _lines(poll.raw)
            end = _spark_offset(poll.offset) if items else start
        else:
            items = []   # the tasks fetch the batch (partitions)
        if items:
            self._polls[(_key(start), _key(end))] = items
            while len(self._polls) > KEPT_POLLS:
                self._polls.popitem(last=False)
        self._latest = end
        if self._available_now:
            self._target = end
        return end

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: the query reads what its first poll finds, then ends."""
        self._available_now = True
        self._target = None

    def reportLatestOffset(self) -> Optional[Dict[str, Any]]:
        """The latest offset this reader knows (for the query's progress; no request)."""
        return self._latest

    def partitions(self, start: Dict[str, Any], end: Dict[str, Any]) -> Sequence[Any]:
        """The batch from `start` to `end` as up to ``partitions`` parts, each item in one, in the
        list's order within each: the items the poll that returned `end` kept, else (a batch
        planned before the query restarted, from Spark's offset log) the range read again,
        ``poll(start, through=end)``, in the driver. None for an empty range."""
        if _key(start) == _key(end):
            return []
        items = self._polls.get((_key(start), _key(end)))
        self._latest = end
        if items is None:
            ranges = self._ranges(start, end)
            if ranges is not None:
                return ranges
            items = _lines(self._poll(start, through=end).raw)
        count = min(self._count, len(items))
        parts = [items[k * len(items) // count:(k + 1) * len(items) // count] for k in range(count)]
        return [ItemsPartition(b"[" + b",".join(part) + b"]", len(part)) for part in parts]

    def read(self, partition: Any) -> Iterator["pyarrow.RecordBatch"]:
        """The rows of one part of a batch under the stream's schema (converted as a batch read
        converts them), as one record batch; no request."""
        from .arrow import Line, SnapshotBatches

        items, count = partition.value, getattr(partition, "count", 0)
        if isinstance(partition, RangePartition):
            lines = self._fetch_range(partition)
            items, count = b"[" + b",".join(lines) + b"]", len(lines)
        if not count:
            return
        batch = SnapshotBatches(_readable(self._schema)).read_one(Line(items, (1, 1), 0, count))
        yield conformed(batch, self._schema)

    def _fetch_range(self, partition: "RangePartition") -> List[bytes]:
        """A range of a batch, fetched in this task on a client of its own (its token from this
        process's environment): one poll from its floor through its end, bounded by the filter."""
        value = partition.value
        with _stream_client(self._read) as client:
            watch = client.watch(self._read.path, self._read._description(), headers=dict(self._read.headers) or None,
                                 query=dict(value["query"]), split="none", **self._parts)
            try:
                return _lines(watch.poll(value["floor"], through=value["through"], lines=True).raw)
            finally:
                watch.close()

    def commit(self, end: Dict[str, Any]) -> None:
        """Spark has committed the batches up to `end`: their kept items are dropped."""
        key = _key(end)
        done = [pair for pair in self._polls if pair[1] == key]
        if done:
            for pair in list(self._polls):
                del self._polls[pair]
                if pair == done[0]:
                    break
        if self._latest is None:
            self._latest = end

    def stop(self) -> None:
        """Closes the watch and the client (the query ended)."""
        watch, client, self._watch, self._client = self._watch, self._client, None, None
        self._polls.clear()
        if watch is not None:
            watch.close()
        if client is not None:
            client.close()


__all__ = ["ListDataSource", "ListReader", "ListStreamReader", "ItemsPartition", "RangePartition", "register", "NAME",
           "DEFAULT_PARTITIONS", "DEFAULT_STREAM_PARTITIONS", "OFFSET_VERSION"]
