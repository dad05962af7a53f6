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

Needs pyspark 4 and pyarrow: ``pip install 'sheaf[spark]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Tuple

from ._engines import CLIENT_OPTIONS, ListRead, require
from .errors import Result, UsageError

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import pyarrow

try:   # the classes below derive from pyspark's when it is there; without it they say how to install it
    from pyspark.sql.datasource import DataSource as _DataSource
    from pyspark.sql.datasource import DataSourceReader as _DataSourceReader
    from pyspark.sql.datasource import InputPartition as _InputPartition
except ImportError:  # pragma: no cover - depends on the environment
    _DataSource = _DataSourceReader = _InputPartition = object   # type: ignore[assignment,misc]

#: The data source's short name: ``spark.read.format("sheaf")``.
NAME = "sheaf"

#: Partitions planned when the ``partitions`` option is not given.
DEFAULT_PARTITIONS = 8

#: How each client option's text is read.
_OPTION_TYPES: Dict[str, Any] = {
    "concurrency": int, "max_concurrency": int, "max_pages": int, "max_body_bytes": int, "max_attempts": int,
    "max_redirects": int, "retry_base": float, "retry_max": float, "timeout": float, "connect_timeout": float,
    "adaptive_window": bool, "verify": bool, "cert": str, "http_version": str,
}

_READ_OPTIONS = frozenset({"url", "path", "partitions", "at_once", "description", "headers", "token_env"})


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
    known = _READ_OPTIONS | CLIENT_OPTIONS
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

        # The Arrow schema Spark checks each batch against (its own conversion, UTC timestamps).
        return ListReader(self._read, self._partitions, to_arrow_schema(schema, timezone="UTC"), self._at_once)


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


__all__ = ["ListDataSource", "ListReader", "register", "NAME", "DEFAULT_PARTITIONS"]
