"""Decoding the deltas: orjson when installed (faster), json otherwise, the same values either way,
integers past 64 bits kept exact (orjson alone would make them floats)."""

from __future__ import annotations

import json
import math

import pytest

import sheaf._run as run

CASES = [
    b'[{"id":1,"name":"a","tags":["x"],"ok":true,"none":null,"f":1.5,"neg":-0.0}]',
    b'[{"id":18446744073709551616}]',                     # 2**64: past orjson's integers
    b'[{"id":-9223372036854775809}]',                     # below int64
    b'[{"id":9223372036854775807}]',                      # int64's largest: 19 digits
    b'[{"big":' + b"7" * 5000 + b'}]',                    # past Python's int-string limit
    b'[{"x":1e400}]',                                     # orjson refuses it, json reads inf
    b'[{"s":"\\ud800"}]',                                 # a lone surrogate escape
    b'[{"s":"1234567890123456789012 in a string"}]',     # digits in a string: either decoder
    b'[]',
]


def _reference(raw: bytes):
    try:
        return json.loads(raw)
    except ValueError:
        return json.loads(raw, parse_int=run._big_int)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isinf(a):
        return a == b
    return type(a) is type(b) and (a == b if not isinstance(a, (list, dict)) else
                                   (len(a) == len(b) and all(_same(x, y) for x, y in
                                                             (zip(a, b) if isinstance(a, list) else
                                                              ((a[k], b.get(k)) for k in a)))))


@pytest.mark.parametrize("raw", CASES)
@pytest.mark.parametrize("decoder", ["orjson", "json"])
def test_every_decoder_gives_json_s_values_exactly(raw, decoder, monkeypatch) -> None:
    if decoder == "json":
        monkeypatch.setattr(run, "_orjson", None)
    elif run._orjson is None:
        pytest.skip("orjson is not installed")
    assert _same(run.decode_items(raw), _reference(raw))


def _spy_on_orjson(monkeypatch) -> list:
    """What the binding hands orjson from now on, call by call (orjson still decodes it)."""
    orjson = pytest.importorskip("orjson")
    calls = []

    class Spy:
        JSONDecodeError = orjson.JSONDecodeError

        @staticmethod
        def loads(raw):
            calls.append(raw)
            return orjson.loads(raw)

    monkeypatch.setattr(run, "_orjson", Spy)
    return calls


def test_orjson_decodes_when_installed_and_the_page_allows(monkeypatch) -> None:
    calls = _spy_on_orjson(monkeypatch)
    assert run.decode_items(b'[{"id":123}]') == [{"id": 123}]
    assert run.decode_items(b'[{"id":12345678901234567890}]') == [{"id": 12345678901234567890}]
    assert calls == [b'[{"id":123}]']        # the 20-digit page went to json


def _served(api, pages):
    """A client whose transport answers /list?page=K with pages[K - 1] (next links walk them)."""
    import sheaf

    def transport(method, url, headers, body):
        page = int(url.rsplit("page=", 1)[1]) if "page=" in url else 1
        return 200, [("Content-Type", "application/json")], pages[page - 1]
    return sheaf.Client(api.base_url, transport=transport)


@pytest.mark.parametrize("raw", [case for case in CASES if b"ud800" not in case])
@pytest.mark.parametrize("decoder", ["orjson", "json"])
def test_through_the_library_every_delta_gives_json_s_values(raw, decoder, api, monkeypatch) -> None:
    # The library says whether a delta holds 19 digits in a row; the values must not depend on it.
    if decoder == "json":
        monkeypatch.setattr(run, "_orjson", None)
    elif run._orjson is None:
        pytest.skip("orjson is not installed")
    with _served(api, [b'{"items":' + raw + b',"next":null}']) as client:
        items = client.fetch_all("/list", items="/items", next="/next", paging="next")
    assert _same(list(items), _reference(raw))


def test_a_delta_without_19_digits_in_a_row_goes_to_orjson_from_the_library_s_memory(api, monkeypatch) -> None:
    given = _spy_on_orjson(monkeypatch)
    pages = [b'{"items":[{"id":1,"n":123456789012345678}],"next":"/list?page=2"}',
             b'{"items":[{"id":2,"n":12345678901234567890123}],"next":"/list?page=3"}',
             b'{"items":[{"id":3,"s":"item-12345678"}],"next":null}']
    with _served(api, pages) as client:
        items = client.fetch_all("/list", items="/items", next="/next", paging="next")
    assert list(items) == [{"id": 1, "n": 123456789012345678}, {"id": 2, "n": 12345678901234567890123},
                           {"id": 3, "s": "item-12345678"}]
    # Pages 1 and 3 were read in place; page 2's 23 digits went to json (orjson would make a float).
    assert [type(raw) for raw in given] == [memoryview, memoryview]


def test_a_group_delta_without_19_digits_in_a_row_goes_to_orjson_from_the_library_s_memory(api, monkeypatch) -> None:
    import sheaf

    given = _spy_on_orjson(monkeypatch)
    with sheaf.Client(api.base_url) as client:
        many = client.fetch_many(["/anchor?n=40&per_page=10", "/anchor?n=25&per_page=10"])
    assert [len(outcome.items) for outcome in many.lists] == [40, 25]
    assert [item["id"] for item in many.lists[0].items] == list(range(40))
    # Every delta was read in place (ids and "item-N" names never run to 19 digits).
    assert given and all(type(raw) is memoryview for raw in given)
