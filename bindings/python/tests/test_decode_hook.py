"""decode=: each item becomes the caller's type as it arrives; a refused item stops the list and
names its index."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import pytest

import sheaf
from conftest import stats

PAGED = dict(paging="page:page", size_param="per_page", page_size=10)


@dataclasses.dataclass
class Thing:
    id: int
    name: str


class ThingTuple(NamedTuple):
    id: int
    name: str


class Strict:
    """A model that refuses one id (a pydantic-like `model_validate`)."""

    refused = 57

    def __init__(self, id: int, name: str) -> None:
        self.id, self.name = id, name

    @classmethod
    def model_validate(cls, item):
        if item["id"] == cls.refused:
            raise ValueError(f"id {item['id']} is not allowed")
        return cls(**item)


@pytest.mark.parametrize("decode, expect", [
    (Thing, lambda i: Thing(i, f"item-{i}")),
    (ThingTuple, lambda i: ThingTuple(i, f"item-{i}")),
    (lambda item: item["id"] * 2, lambda i: i * 2),
])
def test_every_item_is_decoded_in_order(api, decode, expect) -> None:
    with sheaf.Client(api.base_url) as client:
        items = client.fetch_all("/anchor?n=95", decode=decode, **PAGED)
    assert items == [expect(i) for i in range(95)]
    assert items.complete


def test_a_model_validates_and_its_refusal_names_the_item_and_stops_the_list(api) -> None:
    with sheaf.Client(api.base_url, concurrency=2, adaptive_window=False) as client:
        with pytest.raises(sheaf.ItemDecodeError) as raised:
            client.fetch_all("/anchor?n=5000&latency_ms=5", decode=Strict, **PAGED)
    error = raised.value
    assert error.index == 57 and error.item == {"id": 57, "name": "item-57"}
    assert "item 57" in str(error) and "Strict" in str(error) and "not allowed" in str(error)
    assert isinstance(error.__cause__, ValueError) and isinstance(error, sheaf.DecodingError)
    assert [thing.id for thing in error.items] == list(range(57))       # every item before it
    assert stats(api)["requests"] < 100, "the list stopped: it did not fetch its 500 pages"


def test_a_stream_decodes_each_snapshot_and_a_refusal_ends_it(api) -> None:
    seen = []
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.ItemDecodeError) as raised:
            for snapshot in client.stream("/anchor?n=95", decode=Strict, **PAGED):
                seen += snapshot.items
    assert [thing.id for thing in seen] + [thing.id for thing in raised.value.items] == list(range(57))
    assert raised.value.index == 57


def test_decode_is_checked_before_anything_is_sent(api) -> None:
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.UsageError, match="decode"):
            client.fetch_all("/anchor?n=5&decode_hook=1", decode=42)
    # Counted by path: a request an earlier test cancelled may still reach the server.
    assert not any(entry["path"].startswith("/anchor?n=5&decode_hook=1") for entry in stats(api)["log"])
