"""`sheaf get --state FILE`: where incremental runs of lists got to, one entry per list.

The file is JSON: ``{"version": 1, "lists": {LIST: {"field": "/id", "value": 12345}}}``, LIST
being the library's name for the list (the redacted URL of its first page, before any since
parameter: no credential or secret query value is ever written). A run reads its entry at the
start (the value becomes its --until bound or --since-param value) and, only when it succeeds,
writes the value it got to, under a temporary name in the file's folder renamed over it, so a
failed or interrupted run leaves the file as it was.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional

from .output import AtomicFile

VERSION = 1


class StateFileError(Exception):
    """The state file cannot be used: its message names the file and what is wrong."""


class StateFile:
    """The entries of a state file, read once; a missing file has none."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lists: Dict[str, Dict[str, Any]] = {}
        try:
            with open(path, "rb") as file:
                text = file.read()
        except FileNotFoundError:
            return   # a first run
        except OSError as e:
            raise StateFileError(f"cannot read the state file {path}: {e.strerror or e}") from None
        try:
            data = json.loads(text.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise StateFileError(f"the state file {path} is not JSON ({e}): fix it, or remove it to fetch everything again") from None
        lists = data.get("lists") if isinstance(data, dict) else None
        if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(lists, dict):
            raise StateFileError(f"the state file {path} is not a sheaf state file "
                                 f"({{\"version\": {VERSION}, \"lists\": {{...}}}}): fix it, or remove it")
        for name, entry in lists.items():
            value = entry.get("value") if isinstance(entry, dict) else None
            if (not isinstance(entry, dict) or not isinstance(entry.get("field"), str)
                    or isinstance(value, bool) or not isinstance(value, (int, float, str, type(None)))):
                raise StateFileError(f"the state file {path} has a bad entry for {name}: "
                                     "expected {\"field\": POINTER, \"value\": a number, a string or null}")
        self.lists = lists

    def value_for(self, list_name: str, field: str) -> Any:
        """The stored value of `list_name` (None when it has none); an entry of another field is
        refused: its value means nothing for this one."""
        entry = self.lists.get(list_name)
        if entry is None:
            return None
        if entry["field"] != field:
            raise StateFileError(f"the state file {self.path} records {entry['field']} for {list_name}, not {field}: "
                                 "use the same field as the runs that wrote it, or another state file")
        return entry["value"]

    def save(self, list_name: str, field: str, value: Optional[Any]) -> None:
        """Records where `list_name` got to and replaces the file (OSError when it cannot)."""
        self.lists[list_name] = {"field": field, "value": value}
        target = AtomicFile(self.path)
        try:
            target.file.write((json.dumps({"version": VERSION, "lists": self.lists}, indent=2, sort_keys=True) + "\n").encode())
            target.file.flush()
            os.fsync(target.file.fileno())
            target.commit()
        except BaseException:
            target.discard()
            raise
