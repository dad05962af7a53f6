"""A list as a Ray Dataset: :class:`ListSource`, a ``ray.data.Datasource`` whose read tasks are the
list's partitions.

    import ray
    import sheaf.ray

    things = ray.data.read_datasource(sheaf.ray.ListSource("https://api.example.com/v1/things"))

or, a block per partition (Ray does not split them), :func:`read_list`:

    things = sheaf.ray.read_list("https://api.example.com/v1/things", partitions=8)

``get_read_tasks(parallelism)`` plans the partitions on the driver (:meth:`sheaf.Client.partitions`:
one read of page one), ``parallelism`` of them unless ``partitions=`` says how many; each read task
runs one on a client of its own and returns it as one Arrow table (a block). The window
(``max_concurrency``) is shared among the tasks that run at once, the cluster's CPUs when it is
planned unless ``at_once=`` says how many: 200 partitions read two at a time on 2 CPUs have half
the window each, not a 200th. A task whose worker
dies is run again whole by Ray (tasks' ``max_retries``, 3 by default); pass
``ray_remote_args={"retry_exceptions": True}`` to ``read_datasource`` to retry a partition that
failed with an error too (Ray 2.60 warns that ``ray_remote_args`` is deprecated, and names no
other way to ask for that yet).

The token is read by each task from its process's environment (``token_env``, ``SHEAF_TOKEN`` by
default): the source, its tasks and their pickles hold none.

Needs ray[data] and pyarrow: ``pip install 'sheaf[ray]'``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Iterable, List, Mapping, Optional, Union

from ._engines import ListRead, at_once_of, require
from .description import Description
from .errors import Result, UsageError
from .partition import Partition

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import pyarrow

try:   # ListSource derives from Ray's Datasource when Ray is there; without it, it says how to install it
    from ray.data.datasource import Datasource as _Datasource
except ImportError:  # pragma: no cover - depends on the environment
    _Datasource = object   # type: ignore[assignment,misc]


def _require() -> Any:
    require("pyarrow", "ray", "pyarrow")
    return require("ray.data", "ray", "ray[data]")


def _read_partition(read: ListRead, partition: Partition, schema: Optional["pyarrow.Schema"]) -> Iterable[Any]:
    """A read task's work: the partition as one block."""
    return [read.table(partition, schema).replace_schema_metadata(None)]


class ListSource(_Datasource):  # type: ignore[misc,valid-type]
    """A paginated list as a Ray datasource, a read task per partition.

    Args:
        url: the list's URL, query included.
        description: how the list paginates: a :class:`sheaf.Description`, its JSON form (text
            or dict) or a preset's name; detected from page one when None.
        headers: extra headers for every page request (no credential: ``Authorization`` is refused).
        partitions: how many partitions to plan; None: the ``parallelism`` Ray asks for.
        schema: a ``pyarrow.Schema``: every block has exactly these columns, converted to these
            types (missing fields null); None: each block's columns as its items show them.
        token_env: the environment variable each task reads its bearer token from.
        client_options: :class:`sheaf.Client` options for every task's client, such as
            ``{"max_concurrency": 8}`` (the window the partitions share); no credential.
        at_once: the read tasks that run at the same time, among which the window is shared;
            None: the cluster's CPUs when the tasks are planned (a task takes one).

    Raises:
        ImportError: Ray or pyarrow is not installed (``pip install 'sheaf[ray]'``).
        UsageError: a malformed URL, description, header or option.
    """

    def __init__(self, url: str, *, description: Union[None, str, Description, Mapping[str, Any]] = None,
                 headers: Optional[Mapping[str, str]] = None, partitions: Optional[int] = None,
                 schema: Optional["pyarrow.Schema"] = None, token_env: Optional[str] = None,
                 client_options: Optional[Mapping[str, Any]] = None, at_once: Optional[int] = None) -> None:
        _require()
        super().__init__()
        if partitions is not None and (not isinstance(partitions, int) or partitions < 1):
            raise UsageError(Result.INVALID_ARGUMENT, f"partitions must be 1 or more, not {partitions!r}")
        self._read = ListRead.of(url, description, headers, token_env, client_options)
        self._partitions = partitions
        self._schema = schema
        self._at_once = at_once_of(at_once)

    def get_name(self) -> str:
        """The name Ray gives the read tasks."""
        return "SheafList"

    def estimate_inmemory_data_size(self) -> Optional[int]:
        """Unknown before page one is read: None."""
        return None

    def get_read_tasks(self, parallelism: int, per_task_row_limit: Optional[int] = None,
                       data_context: Any = None) -> List[Any]:
        """The list's partitions (planned now, reading page one), a ``ReadTask`` each."""
        from ray.data.block import BlockMetadata
        from ray.data.datasource import ReadTask

        count = self._partitions or max(1, int(parallelism))
        tasks = []
        for partition in self._read.plan(count, self._at_once or _cpus()):
            metadata = BlockMetadata(num_rows=partition.items_expected, size_bytes=None, exec_stats=None,
                                     input_files=None)
            read = functools.partial(_read_partition, self._read, partition, self._schema)
            try:
                tasks.append(ReadTask(read, metadata, schema=self._schema, per_task_row_limit=per_task_row_limit))
            except TypeError:   # pragma: no cover - a Ray without those parameters
                tasks.append(ReadTask(read, metadata))
        return tasks

    def __repr__(self) -> str:
        return f"<sheaf.ray.ListSource {self._read.base_url}{self._read.path}>"


def _cpus() -> Optional[int]:
    """The cluster's CPUs now (a read task takes one), None when Ray does not say."""
    import ray

    cpus = ray.cluster_resources().get("CPU") if ray.is_initialized() else None
    return max(1, int(cpus)) if cpus else None


def _tasks_at_once(read_args: Mapping[str, Any]) -> Optional[int]:
    """The read tasks Ray runs at once under `read_args`: the cluster's CPUs over each task's
    (``ray_remote_args={"num_cpus": ...}``), within ``concurrency`` when that is a number."""
    cpus = _cpus()
    each = (read_args.get("ray_remote_args") or {}).get("num_cpus", 1)
    slots = int(cpus / each) if cpus and isinstance(each, (int, float)) and each > 0 else cpus
    limit = read_args.get("concurrency")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1:
        slots = min(slots, limit) if slots else limit
    return max(1, slots) if slots else None


def read_list(url: str, *, partitions: Optional[int] = None,
              description: Union[None, str, Description, Mapping[str, Any]] = None,
              headers: Optional[Mapping[str, str]] = None, schema: Optional["pyarrow.Schema"] = None,
              token_env: Optional[str] = None, client_options: Optional[Mapping[str, Any]] = None,
              at_once: Optional[int] = None, resource_reservation: bool = False, **read_args: Any) -> Any:
    """The list at `url` as a ``ray.data.Dataset`` of a block per partition:
    ``ray.data.read_datasource(ListSource(...), override_num_blocks=partitions)``.

    Told only ``ListSource(partitions=N)``, Ray still asks for at least
    ``DataContext.read_op_min_num_blocks`` blocks (200) and splits each partition's table to get
    them: a 1,000,000-item list read in 2 partitions by 2 CPUs took 2.9 s that way, 2.3 s here
    (``bench/engines.py``, the ``ray`` rows). Here the partitions are the blocks.

    Args:
        url, description, headers, schema, token_env, client_options: as for :class:`ListSource`.
        at_once: as for :class:`ListSource`; None: the cluster's CPUs over each task's
            (``ray_remote_args``' ``num_cpus``), within ``concurrency`` when that is a number.
        partitions: how many partitions, and blocks; None: two for each read task Ray runs at
            once (`at_once`), 4 on 2 CPUs. Fewer, longer partitions cost fewer round trips:
            1,000,000 items on 2 CPUs took 1.44 s in 2 partitions, 1.47 s in 4 and 1.70 s in 8
            (``bench/engines.py``); Ray's own rule would ask for 200.
        resource_reservation: Ray Data's operator resource reservation for this dataset (the
            copy of the ``DataContext`` it keeps; the current one is left as it was). Off by
            default: on, Ray holds part of the CPUs for the read's outputs, and on 2 CPUs the
            second read task waits until the first ends, so the server sees half the window
            (``bench/engines.py``: 1,000,000 items in 2 partitions took 2.4 s with it, 1.5 s
            without).
        **read_args: passed to ``ray.data.read_datasource`` (``ray_remote_args``, ``concurrency``, ...).

    Raises:
        ImportError: Ray or pyarrow is not installed (``pip install 'sheaf[ray]'``).
        UsageError: a malformed URL, description, header or option, or ``override_num_blocks``
            given with ``partitions``.
    """
    data = _require()
    slots = at_once_of(at_once) or _tasks_at_once(read_args)
    if partitions is None and slots:
        partitions = 2 * slots
    source = ListSource(url, description=description, headers=headers, partitions=partitions, schema=schema,
                        token_env=token_env, client_options=client_options, at_once=slots)
    if partitions is not None:
        if read_args.get("override_num_blocks") not in (None, partitions):
            raise UsageError(Result.INVALID_ARGUMENT, "override_num_blocks is the partitions here: give one of them")
        read_args["override_num_blocks"] = partitions
    # The dataset keeps a copy of the current context, made as read_datasource returns it.
    context = data.DataContext.get_current()
    kept = context.op_resource_reservation_enabled
    context.op_resource_reservation_enabled = bool(resource_reservation)
    try:
        return data.read_datasource(source, **read_args)
    finally:
        context.op_resource_reservation_enabled = kept


__all__ = ["ListSource", "read_list"]
