"""A partition of a list: a range of its pages that any process can run on a client of its own."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Union

from .errors import Result, UsageError

#: The version of the partition JSON this package reads and writes.
PARTITION_VERSION = 1


class Partition:
    """One partition of a list, as :meth:`sheaf.Client.partitions` plans them: a self-contained,
    serialisable value (its JSON text, ``str(partition)`` or ``.json``) that any process runs
    with :meth:`sheaf.Client.fetch_partition` on a client of its own, getting exactly that range's
    items in order. The partitions of one plan cover the list exactly once.

    It holds no credential: the client that runs it sends its own token, API key and secret query
    values. It pickles as its JSON text. ``Partition(text)`` reads one back (a str, bytes, or
    the parsed dict); the library checks it when it is run.
    """

    __slots__ = ("_json", "_fields")

    def __init__(self, text: Union[str, bytes, Dict[str, Any]]) -> None:
        if isinstance(text, dict):
            fields = text
            text = json.dumps(text, separators=(",", ":"))
        else:
            if isinstance(text, bytes):
                text = text.decode("utf-8")
            if not isinstance(text, str):
                raise UsageError(Result.INVALID_ARGUMENT, f"a partition is its JSON text, not {type(text).__name__}")
            try:
                fields = json.loads(text)
            except ValueError as error:
                raise UsageError(Result.INVALID_ARGUMENT, f"the partition is not JSON: {error}") from None
        if not isinstance(fields, dict) or "sheaf_partition" not in fields:
            raise UsageError(Result.INVALID_ARGUMENT, "not a partition (sheaf.Client.partitions makes them)")
        object.__setattr__(self, "_json", text)
        object.__setattr__(self, "_fields", fields)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Partition is read-only")

    @property
    def json(self) -> str:
        """The partition's JSON text: what ``sheaf_list_set_partition`` and ``sheaf get --partition`` take."""
        return self._json

    @property
    def index(self) -> int:
        """Its place in the plan, from 0."""
        return int(self._fields["index"])

    @property
    def count(self) -> int:
        """The partitions of the plan."""
        return int(self._fields["count"])

    @property
    def first_page(self) -> int:
        """The range's first page, counted from 0."""
        return int(self._fields["first_page"])

    @property
    def pages(self) -> int:
        """The range's pages as planned (the last, open-ended partition may read more)."""
        return int(self._fields["pages"])

    @property
    def open_ended(self) -> bool:
        """Whether the range goes on to the list's end (the last partition of a plan)."""
        return bool(self._fields["open_ended"])

    @property
    def page_size(self) -> int:
        """The page size page one was served."""
        return int(self._fields["page_size"])

    @property
    def items_expected(self) -> Optional[int]:
        """The items the range expects from the server's total; None when unknown."""
        value = self._fields.get("items_expected")
        return None if value is None else int(value)

    @property
    def window(self) -> Optional[int]:
        """The most requests its run has in flight: its share of the planning client's
        ``max_concurrency``, so that all the partitions together never send more at once than one
        process would. None: the running client's window alone."""
        value = self._fields.get("window")
        return None if value is None else int(value)

    @property
    def why(self) -> Optional[str]:
        """Why the list was not split (it is then one partition covering all of it); None when it was."""
        return self._fields.get("why")

    @property
    def url(self) -> str:
        """The list's first URL, without credentials or secret query values."""
        return str(self._fields["url"])

    def __str__(self) -> str:
        return self._json

    def __repr__(self) -> str:
        why = f", why={self.why!r}" if self.why else ""
        return (f"<sheaf.Partition {self.index + 1} of {self.count}: pages {self.first_page + 1}"
                f"{'+' if self.open_ended else f'-{self.first_page + self.pages}'}{why}>")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Partition) and other._fields == self._fields

    def __hash__(self) -> int:
        return hash(json.dumps(self._fields, sort_keys=True))

    def __reduce__(self) -> Any:
        return (Partition, (self._json,))
