"""A list as a Dask DataFrame: :func:`read_list`, a Dask partition per Sheaf partition.

    import sheaf.dask

    things = sheaf.dask.read_list("https://api.example.com/v1/things", partitions=8)
    things.groupby("owner").size().compute()

The partitions are planned when ``read_list`` is called (:meth:`sheaf.Client.partitions`: one read
of page one); each task runs one on a client of its own (``dask.dataframe.from_map``) and returns
a pandas frame. A task whose worker dies is run again whole on another worker (the scheduler's
``allowed-failures``); ``compute(retries=N)`` retries a partition that failed with an error too.

The token is read by each task from its worker's environment (``token_env``, ``SHEAF_TOKEN`` by
default): the graph, its tasks and their pickles hold none.

Needs dask[dataframe] and pyarrow: ``pip install 'sheaf[dask]'`` (``distributed`` for a cluster).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from ._engines import ListRead, at_once_of, require
from .description import Description
from .errors import Result, UsageError
from .partition import Partition

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import pyarrow

#: Partitions planned when ``partitions`` is not given.
DEFAULT_PARTITIONS = 8


def _read_frame(partition: Partition, read: ListRead, schema: "pyarrow.Schema") -> Any:
    """A task's work: the partition as a pandas frame with exactly the columns of `schema`."""
    return read.table(partition, schema).to_pandas()


def read_list(url: str, *, partitions: int = DEFAULT_PARTITIONS,
              description: Union[None, str, Description, Mapping[str, Any]] = None,
              headers: Optional[Mapping[str, str]] = None, schema: Optional["pyarrow.Schema"] = None,
              token_env: Optional[str] = None, client_options: Optional[Mapping[str, Any]] = None,
              at_once: Optional[int] = None) -> Any:
    """The list at `url` as a ``dask.dataframe.DataFrame``, a partition per Sheaf partition, in
    the list's order (no index: a range index per partition). The window (``max_concurrency``)
    is shared among the tasks that run at once: the threads of the ``distributed`` cluster this
    process is a client of when the list is planned, else all the partitions (the same machine
    may compute them on as many threads), unless ``at_once=`` says how many.

    Args:
        url: the list's URL, query included.
        partitions: how many partitions to plan (a list whose pages are not addressed is one).
        description: how the list paginates: a :class:`sheaf.Description`, its JSON form (text
            or dict) or a preset's name; detected from page one when None.
        headers: extra headers for every page request (no credential: ``Authorization`` is refused).
        schema: a ``pyarrow.Schema``, the frame's columns and their types (values converted);
            None: the first page's (a field that first appears later is left out).
        token_env: the environment variable each task reads its bearer token from (this process
            reads it too, to plan).
        client_options: :class:`sheaf.Client` options for every task's client, such as
            ``{"max_concurrency": 8}`` (the window the partitions share); no credential.
        at_once: the tasks that read partitions at the same time; None: as said above.

    Raises:
        ImportError: Dask or pyarrow is not installed (``pip install 'sheaf[dask]'``).
        UsageError: a malformed URL, description, header or option; Error: as
            :meth:`sheaf.Client.partitions`, when the first page fails.
    """
    require("pyarrow", "dask", "pyarrow")
    frames = require("dask.dataframe", "dask", "dask[dataframe]")
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise UsageError(Result.INVALID_ARGUMENT, f"partitions must be 1 or more, not {partitions!r}")
    read = ListRead.of(url, description, headers, token_env, client_options)
    planned = read.plan(partitions, at_once_of(at_once) or _cluster_threads())
    if schema is None:
        import pyarrow as pa

        schema = read.first_page_schema()
        schema = pa.schema([field.with_type(pa.string()) if pa.types.is_null(field.type) else field
                            for field in schema])
    meta = schema.empty_table().to_pandas()
    return frames.from_map(_read_frame, planned, read=read, schema=schema, meta=meta,
                           label="sheaf-read-list", enforce_metadata=False)


def _cluster_threads() -> Optional[int]:
    """The worker threads of the ``distributed`` cluster this process is a client of, None
    when it is none (or distributed is not installed)."""
    try:
        from distributed import get_client
        threads = sum(get_client().nthreads().values())
    except (ImportError, ValueError):
        return None
    return threads or None


__all__ = ["read_list", "DEFAULT_PARTITIONS"]
