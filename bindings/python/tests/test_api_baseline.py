"""The public Python API against bindings/python/tests/api_baseline.json: what a release had, the
next one still has (api_baseline.py says exactly what that means). Regenerate the baseline only
as the README says: `python3 bindings/python/tests/api_baseline.py --update`."""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

import api_baseline  # noqa: E402


def test_the_public_api_keeps_everything_the_baseline_records() -> None:
    problems = api_baseline.compare(api_baseline.load(), api_baseline.record(api_baseline.public_modules()))
    assert not problems, ("the public Python API changed incompatibly (api_baseline.py --update only as the "
                          "README says):\n" + "\n".join(problems))


def test_the_baseline_covers_the_package_and_each_public_module() -> None:
    recorded = api_baseline.load()
    assert set(recorded) == set(api_baseline.public_modules())
    assert "Client" in recorded["sheaf"] and recorded["sheaf"]["Result"]["enum"]["OK"] == 0


# ---- the rules, on a small module of their own --------------------------------------------------

class _Base(Exception):
    pass


def _module(build: Callable[[Dict[str, Any]], None]) -> ModuleType:
    """A module like one of sheaf's (its classes claim sheaf.shelf as their module, since only the
    package's own members are recorded), changed by `build`."""
    module = ModuleType("sheaf.shelf")

    class Error(_Base):
        pass

    class Kind(enum.IntEnum):
        PAGE = 1
        CURSOR = 2

    class Shelf:
        def fetch(self, path: str, limit: int = 0, *, deadline: float = 0) -> List[Any]:
            return []

    def open_shelf(url: str, token: str = "") -> Shelf:
        return Shelf()

    names: Dict[str, Any] = {"Error": Error, "Kind": Kind, "Shelf": Shelf, "open_shelf": open_shelf, "LIMIT": 100}
    build(names)
    for value in names.values():
        if isinstance(value, type):
            value.__module__ = "sheaf.shelf"
    for name, value in names.items():
        setattr(module, name, value)
    module.__all__ = list(names)
    return module


def _problems(change: Callable[[Dict[str, Any]], None]) -> List[str]:
    baseline = api_baseline.record({"sheaf.shelf": _module(lambda names: None)})
    return api_baseline.compare(baseline, api_baseline.record({"sheaf.shelf": _module(change)}))


def test_an_unchanged_module_is_compatible() -> None:
    assert _problems(lambda names: None) == []


def test_a_removed_name_fails() -> None:
    assert _problems(lambda names: names.pop("open_shelf")) == ["sheaf.shelf.open_shelf: removed"]


def test_a_removed_method_fails() -> None:
    def change(names: Dict[str, Any]) -> None:
        class Shelf:
            pass
        names["Shelf"] = Shelf
    assert _problems(change) == ["sheaf.shelf.Shelf.fetch: removed"]


def test_a_renamed_parameter_fails() -> None:
    def change(names: Dict[str, Any]) -> None:
        names["open_shelf"] = lambda base_url, token="": None
    [problem] = _problems(change)
    assert problem.startswith("sheaf.shelf.open_shelf: parameter 1 'url' is now 'base_url'")


def test_a_new_required_parameter_fails_and_a_lost_default_fails() -> None:
    def change(names: Dict[str, Any]) -> None:
        names["open_shelf"] = lambda url, token, retries: None
    assert [problem.split(":")[1] for problem in _problems(change)] == [
        " parameter 'token' lost its default", " new parameter 'retries' has no default"]


def test_a_changed_base_fails() -> None:
    def change(names: Dict[str, Any]) -> None:
        names["Error"] = type("Error", (ValueError,), {})
    [problem] = _problems(change)
    assert problem.startswith("sheaf.shelf.Error: no longer derives from test_api_baseline._Base")


def test_a_removed_or_renumbered_enum_member_fails() -> None:
    def change(names: Dict[str, Any]) -> None:
        names["Kind"] = enum.IntEnum("Kind", {"PAGE": 3})
    assert _problems(change) == ["sheaf.shelf.Kind.PAGE: enum value 1 is now 3", "sheaf.shelf.Kind.CURSOR: enum member removed"]


def test_additions_pass() -> None:
    def change(names: Dict[str, Any]) -> None:
        class Error(names["Error"]):   # a new class between the old one and its base
            pass

        class Shelf(names["Shelf"]):
            def fetch(self, path: str, limit: int = 0, page_size: int = 0, *, deadline: float = 0,
                      retries: int = 0, **parts: Any) -> List[Any]:
                return []

            def close(self) -> None:
                pass

        names.update(Error=Error, Shelf=Shelf, close_shelf=lambda shelf: None, Cursor=type("Cursor", (), {}))
        names["Kind"] = enum.IntEnum("Kind", {"PAGE": 1, "CURSOR": 2, "OFFSET": 3})
    assert _problems(change) == []
