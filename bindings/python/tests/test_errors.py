"""Every failure is the right exception, with the library's message and the items before it."""

from __future__ import annotations

import pickle
import re
import socket

import pytest

import sheaf
from conftest import TOKEN, expected_items, stats

ANCHOR = dict(items="/items", next="/next_page", total="/total", paging="page:page",
              size_param="per_page", page_size=50, id="/id")


def fast_client(server, **options) -> sheaf.Client:
    options.setdefault("retry_base", 0.001)
    options.setdefault("retry_max", 0.02)
    return sheaf.Client(server.base_url, **options)


def test_a_failing_status_is_an_http_error_with_status_and_body(api):
    with fast_client(api, max_attempts=2) as client:
        with pytest.raises(sheaf.HTTPError) as raised:
            client.fetch_all("/status?code=418")
    error = raised.value
    assert error.code == sheaf.Result.HTTP and error.status == 418
    assert '"status":418' in error.body
    assert "/status" in error.message and error.items == []


def test_a_404_inside_the_promised_pages_is_an_http_error_keeping_the_pages_before_it(api):
    with fast_client(api) as client:
        with pytest.raises(sheaf.HTTPError) as raised:
            client.fetch_all("/anchor?n=1000&fail=2:1:404", **ANCHOR)
    assert raised.value.status == 404
    assert "injected" in raised.value.body
    assert raised.value.items == expected_items(50)


def test_a_persistent_500_fails_after_max_attempts(api):
    with fast_client(api, max_attempts=3) as client:
        with pytest.raises(sheaf.HTTPError) as raised:
            client.fetch_all("/anchor?n=1000&fail=2:9:500", **ANCHOR)
    assert raised.value.status == 500
    page_two = [e for e in stats(api)["log"] if re.search(r"[?&]page=2(&|$)", e["path"])]
    assert len(page_two) == 3


def test_a_transient_503_is_retried_to_success(api):
    with fast_client(api) as client:
        assert client.fetch_all("/anchor?n=300&fail=2:2:503", **ANCHOR) == expected_items(300)


def test_a_closed_port_is_a_transport_error(api):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # The port is closed now: nothing listens there.
    with sheaf.Client(f"http://127.0.0.1:{port}", max_attempts=2, retry_base=0.001) as client:
        with pytest.raises(sheaf.TransportError) as raised:
            client.fetch_all("/anchor")
    assert raised.value.code == sheaf.Result.TRANSPORT
    assert raised.value.items == [] and raised.value.message


def test_a_page_that_is_not_json_is_a_decoding_error_naming_its_url(api):
    with fast_client(api) as client:
        with pytest.raises(sheaf.DecodingError) as raised:
            client.fetch_all("/anchor?n=1000&garbage=3", **ANCHOR)
    error = raised.value
    assert error.code == sheaf.Result.BAD_PAGE
    assert "page=3" in error.message
    assert error.items in (expected_items(50), expected_items(100))


def test_a_body_over_the_cap_is_a_decoding_error(api):
    with fast_client(api, max_body_bytes=65536) as client:
        with pytest.raises(sheaf.DecodingError) as raised:
            client.fetch_all("/anchor?n=1000&pad=4096", **ANCHOR)
    assert raised.value.code == sheaf.Result.BODY_TOO_LARGE


def test_a_list_shorter_than_its_total_is_incomplete_but_keeps_its_items(api):
    with fast_client(api) as client:
        with pytest.raises(sheaf.IncompleteError) as raised:
            client.fetch_all("/anchor?n=1000&short=30", **ANCHOR)
    assert isinstance(raised.value, sheaf.DecodingError)
    assert raised.value.code == sheaf.Result.INCOMPLETE
    assert raised.value.items == expected_items(970)


def test_a_next_link_that_loops_is_a_policy_error(api):
    with fast_client(api) as client:
        with pytest.raises(sheaf.PolicyError) as raised:
            # Walked by its next links (pinned): detection would address the pages by number.
            client.fetch_all("/anchor?n=1000&loop=1&per_page=50", items="/items", next="/next_page",
                             total="/total", paging="next")
    assert raised.value.code == sheaf.Result.LOOP
    assert raised.value.items == expected_items(150)


def test_an_endless_list_stops_at_the_page_cap(api):
    with fast_client(api, max_pages=20) as client:
        with pytest.raises(sheaf.PolicyError) as raised:
            client.fetch_all("/anchor?endless=1", items="/items", next="/next_page", paging="page:page",
                             size_param="per_page", page_size=50)
    assert raised.value.code == sheaf.Result.PAGE_LIMIT
    assert stats(api)["requests"] <= 20


def test_a_next_link_to_another_origin_is_refused_and_the_token_stays_home(api, other_api):
    with sheaf.Client(api.base_url, TOKEN) as client:
        with pytest.raises(sheaf.PolicyError) as raised:
            client.fetch_all("/anchor", query={"n": 1000, "next_base": other_api.base_url},
                             items="/items", next="/next_page")
    error = raised.value
    assert error.code == sheaf.Result.CROSS_ORIGIN
    assert TOKEN not in error.message and TOKEN not in repr(error)
    assert error.items == expected_items(50)
    home, elsewhere = stats(api), stats(other_api)
    assert [e["authorization"] for e in home["log"]] == [f"Bearer {TOKEN}"]
    assert elsewhere["requests"] == 0
    assert all(e["authorization"] is None for e in elsewhere["log"])


@pytest.mark.parametrize("options", [
    {"concurrency": 0}, {"concurrency": 65}, {"max_attempts": 0}, {"max_pages": 0},
    {"max_redirects": 51}, {"retry_base": -1.0}, {"concurrency": "8"},
])
def test_options_out_of_range_are_usage_errors(api, options):
    with pytest.raises(sheaf.UsageError) as raised:
        sheaf.Client(api.base_url, **options)
    assert isinstance(raised.value, ValueError)
    assert raised.value.code == sheaf.Result.INVALID_ARGUMENT
    assert next(iter(options)) in raised.value.message


@pytest.mark.parametrize("base_url", ["", "not a url", "ftp://127.0.0.1/", "/relative/path"])
def test_a_malformed_base_url_is_a_usage_error(base_url):
    with pytest.raises(sheaf.UsageError):
        sheaf.Client(base_url, TOKEN)


@pytest.mark.parametrize("options", [
    {"items": "items"}, {"next": "next_page"}, {"total": "a/b"}, {"id": "id"},
    {"paging": "page:"}, {"paging": "page:page", "size_param": "per_page", "page_size": 0},
    {"first": -1, "paging": "page:page"}, {"max_items": -1}, {"preset": "nope"}, {"paging": "sideways"},
    {"total": "header:"}, {"id": "id"},
    {"page_size": 10}, {"query": [("lonely",)]},
])
def test_bad_list_options_are_usage_errors_before_anything_is_sent(api, options):
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.UsageError) as raised:
            client.fetch_all("/anchor", **options)
    assert raised.value.message
    assert stats(api)["requests"] == 0


def test_every_failing_result_code_has_its_family():
    families = {
        sheaf.HTTPError: {"HTTP"},
        sheaf.TransportError: {"TRANSPORT"},
        sheaf.DecodingError: {"BAD_PAGE", "BODY_TOO_LARGE", "INCOMPLETE", "NOT_FOLLOWED", "UNDETECTED"},
        sheaf.IncompleteError: {"INCOMPLETE"},
        sheaf.NotFollowedError: {"NOT_FOLLOWED"},
        sheaf.DetectionError: {"UNDETECTED"},
        sheaf.PolicyError: {"CROSS_ORIGIN", "LOOP", "PAGE_LIMIT", "REPEATED_PAGE"},
        sheaf.StoppedError: {"STOPPED", "CANCELLED"},
        sheaf.UsageError: {"INVALID_ARGUMENT", "UNSUPPORTED", "STATE", "REENTRANT"},
        sheaf.InternalError: {"INTERNAL"},
    }
    for code in sheaf.Result:
        if code.is_success or code == sheaf.Result.PENDING:   # PENDING is "not yet", no failure
            continue
        error = sheaf.errors.error_for(code)
        assert isinstance(error, sheaf.Error) and error.code == code and error.message
        assert {cls for cls, names in families.items() if code.name in names} == \
               {cls for cls in families if isinstance(error, cls)}, code.name


def test_errors_survive_pickling():
    error = sheaf.errors.error_for(sheaf.Result.HTTP, "GET /x: HTTP 404", items=[1, 2], status=404, body="no")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is sheaf.HTTPError
    assert (copy.code, copy.message, copy.items, copy.status, copy.body) == \
           (sheaf.Result.HTTP, "GET /x: HTTP 404", [1, 2], 404, "no")
