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


def test_orjson_decodes_when_installed_and_the_page_allows(monkeypatch) -> None:
    orjson = pytest.importorskip("orjson")
    calls = []

    class Spy:
        JSONDecodeError = orjson.JSONDecodeError

        @staticmethod
        def loads(raw):
            calls.append(raw)
            return orjson.loads(raw)

    monkeypatch.setattr(run, "_orjson", Spy)
    assert run.decode_items(b'[{"id":123}]') == [{"id": 123}]
    assert run.decode_items(b'[{"id":12345678901234567890}]') == [{"id": 12345678901234567890}]
    assert calls == [b'[{"id":123}]']        # the 20-digit page went to json
