"""The lifetime shared by the objects that own C handles: ``with`` closes them, and so, as a last
resort, does the garbage collector."""

from __future__ import annotations

from typing import Any, TypeVar

_T = TypeVar("_T", bound="Closing")


class Closing:
    """A base for objects with an idempotent ``close()``."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _T) -> _T:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - a finaliser must not raise (e.g. at interpreter exit)
            pass
