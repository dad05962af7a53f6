"""Sheaf: every item of a paginated REST list, in one call or as a stream of growing snapshots.

    import sheaf

    with sheaf.Client("https://api.example.com", token) as client:
        things = client.fetch_all("/v1/things")                 # detected from the first page
        repos = client.fetch_all("/user/repos", preset="github", id="/id")
        for snapshot in client.stream("/v1/things", items="/data", paging="offset:offset"):
            print(snapshot.item_count, "of", snapshot.expected_items)

The work is done by libsheaf.so (a C library with a Swift core), loaded with ctypes from
``$SHEAF_LIBRARY_PATH`` (a file) when it is set, else from the package's own ``lib/``, then the
source tree's ``build/lib/``.
"""

from __future__ import annotations

from typing import Optional

from . import _ffi
from ._run import live_runs as _live_runs  # noqa: F401 - for tests
from .aio import AsyncClient
from .arrow import SchemaError
from .client import Client, ListOptions, Query
from .description import Description, JSONNumber, presets
from .errors import (
    DecodingError,
    DetectionError,
    CredentialError,
    DeadlineError,
    Error,
    FileError,
    HTTPError,
    IncompleteError,
    ItemDecodeError,
    InternalError,
    NotFollowedError,
    PartialError,
    RateLimitedError,
    APIError,
    PolicyError,
    Result,
    StoppedError,
    TransportError,
    UsageError,
)
from .group import GroupDelta, GroupResult, GroupStream, ListOutcome
from .hooks import Event
from .request import ApiKey, Response
from .pager import Pager
from .partition import Partition
from .snapshot import Items, Progress, Snapshot, StopReason, Written
from .stream import SnapshotStream
from .transport import Transport
from .watch import Poll, Watch

#: The version of this package.
__version__ = "1.0.0"

#: The file libsheaf.so was loaded from; None when it could not be loaded (then the first use of
#: the library raises ImportError, listing where it was looked for).
library_path: Optional[str] = _ffi.library_path


def library_version() -> str:
    """The version of the loaded libsheaf.so, "MAJOR.MINOR.PATCH"."""
    return _ffi.decode(_ffi.lib.sheaf_version_string())


__all__ = [
    "AsyncClient",
    "Client",
    "ListOptions",
    "ApiKey",
    "Response",
    "Event",
    "Snapshot",
    "SnapshotStream",
    "GroupResult",
    "GroupDelta",
    "GroupStream",
    "ListOutcome",
    "Pager",
    "Poll",
    "Partition",
    "Transport",
    "Query",
    "Description",
    "JSONNumber",
    "presets",
    "Result",
    "Error",
    "HTTPError",
    "FileError",
    "DeadlineError",
    "CredentialError",
    "Items",
    "SchemaError",
    "Progress",
    "Watch",
    "Written",
    "StopReason",
    "TransportError",
    "DecodingError",
    "IncompleteError",
    "ItemDecodeError",
    "NotFollowedError",
    "DetectionError",
    "PolicyError",
    "PartialError",
    "RateLimitedError",
    "APIError",
    "StoppedError",
    "UsageError",
    "InternalError",
    "library_path",
    "library_version",
    "__version__",
]
