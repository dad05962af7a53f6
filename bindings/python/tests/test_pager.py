"""Load more: ``Client.pager`` fetches one page per ``more()`` call, joins calls made while a page
is on its way (counted at the server), looks ahead when asked, starts over on ``reset()``, and ends
with the list's outcome and a resume token."""

from __future__ import annotations

import threading
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from conftest import expected_items, stats
from test_conventions import CONVENTIONS, N, PROBES, path_of, plain

import sheaf
from sheaf import Result


def _requests(api, path: str) -> int:
    """Requests the server saw for the endpoint at `path` (any query)."""
    return sum(1 for entry in stats(api)["log"] if entry["path"].split("?")[0] == path)


def _pages_asked(api) -> list:
    """The `page` parameter of every request the server saw, in order (None: none)."""
    return [parse_qs(urlsplit(entry["path"]).query).get("page", [None])[0] for entry in stats(api)["log"]]


def _eventually(condition, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


@pytest.mark.parametrize("name", sorted(CONVENTIONS))
def test_each_call_fetches_one_page_of_every_convention(api, name: str) -> None:
    path = f"{path_of(name)}?n={N}{CONVENTIONS[name][0]}"
    pages = []
    with sheaf.Client(api.base_url) as client, client.pager(path) as pager:
        assert pager.status == "idle" and pager.pages == 0 and _requests(api, path_of(name)) == 0
        while (page := pager.more()) is not None:
            pages.append(page)
            # One page per call, and one request per page: nothing is fetched ahead.
            assert pager.pages == len(pages)
            assert _requests(api, path_of(name)) == len(pages) + PROBES.get(name, 0)
        assert pager.done and pager.outcome == Result.OK and pager.resume_token is None
        assert pager.stop_reason == sheaf.StopReason.COMPLETE
        assert plain(pager.items) == expected_items(N)
    assert plain([item for page in pages for item in page]) == expected_items(N)
    assert all(pages[:-1]), "only the last page may be empty (a list that ends with an empty page)"


def test_calls_while_a_page_is_on_its_way_join_it(api) -> None:
    path = "/anchor?n=100&per_page=10&latency_ms=300"
    answers = []
    with sheaf.Client(api.base_url) as client, client.pager(path) as pager:
        threads = [threading.Thread(target=lambda: answers.append(pager.more())) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert answers == [expected_items(10)] * 8
        assert _requests(api, "/anchor") == 1
        assert pager.more() == expected_items(20, 10)
        assert _requests(api, "/anchor") == 2
        assert pager.items == expected_items(20)
        assert pager.expected_total == 100


def test_look_ahead_fetches_pages_ahead_and_hands_them_out_one_at_a_time(api) -> None:
    with sheaf.Client(api.base_url) as client, client.pager("/anchor?n=45&per_page=10", look_ahead=2) as pager:
        assert pager.more() == expected_items(10)
        assert _eventually(lambda: pager.pages_ready == 2)
        assert _requests(api, "/anchor") == 3
        assert pager.items == expected_items(10), "pages fetched ahead are not handed out"
        assert [len(page) for page in pager] == [10, 10, 10, 5]
        assert _requests(api, "/anchor") == 5


def test_reset_and_first_start_over_from_page_one(api) -> None:
    with sheaf.Client(api.base_url) as client, client.pager("/anchor?n=100&per_page=10") as pager:
        pager.more()
        pager.more()
        pager.reset()
        assert pager.status == "idle" and pager.pages == 0 and pager.items == []
        assert pager.more() == expected_items(10)
        pager.more()
        assert pager.first() == expected_items(10)
        assert pager.pages == 1
        assert _pages_asked(api) == [None, "2", None, "2", None]


def test_a_failure_comes_after_the_pages_before_it_and_its_token_goes_on(api) -> None:
    path = "/anchor?n=95&per_page=10&fail=3:1:500"
    with sheaf.Client(api.base_url, max_attempts=1) as client:
        with client.pager(path, look_ahead=3) as pager:
            assert pager.more() == expected_items(10)
            assert pager.more() == expected_items(20, 10)
            with pytest.raises(sheaf.HTTPError) as failed:
                pager.more()
            assert failed.value.status == 500
            assert pager.done and pager.outcome == Result.HTTP
            token = failed.value.resume_token
            assert token is not None and token == pager.resume_token
        rest = client.fetch_all(path, resume=token)
    assert rest == expected_items(95, 20)


def test_budgets_end_a_pager_where_its_caller_asked(api) -> None:
    with sheaf.Client(api.base_url) as client, client.pager("/anchor?n=100&per_page=10", max_pages=2) as pager:
        assert [len(page) for page in pager] == [10, 10]
        assert pager.outcome == Result.OK and pager.stop_reason == sheaf.StopReason.PAGE_BUDGET
        rest = client.fetch_all("/anchor?n=100&per_page=10", resume=pager.resume_token)
    assert rest == expected_items(100, 20)


def test_closing_ends_the_calls_waiting_and_a_closed_pager_refuses_calls(api) -> None:
    errors = []
    with sheaf.Client(api.base_url) as client:
        pager = client.pager("/anchor?n=100&per_page=10&latency_ms=5000")

        def wait() -> None:
            try:
                pager.more()
            except sheaf.Error as error:
                errors.append(error)

        thread = threading.Thread(target=wait)
        thread.start()
        assert _eventually(lambda: pager.status == "loading")
        started = time.monotonic()
        pager.close()
        thread.join(10)
        assert time.monotonic() - started < 3
        assert [type(error) for error in errors] == [sheaf.StoppedError]
        assert errors[0].code == Result.CANCELLED
        with pytest.raises(sheaf.UsageError):
            pager.more()
        pager.close()   # idempotent


def test_a_cancelled_pager_raises_until_it_is_reset(api) -> None:
    with sheaf.Client(api.base_url) as client, client.pager("/anchor?n=100&per_page=10") as pager:
        assert pager.more() == expected_items(10)
        pager.cancel()
        with pytest.raises(sheaf.StoppedError):
            pager.more()
        pager.reset()
        assert pager.more() == expected_items(10)


def test_bad_arguments_are_refused_before_anything_is_fetched(api) -> None:
    with sheaf.Client(api.base_url, concurrency=4) as client:
        for look_ahead in (-1, 5):
            with pytest.raises(sheaf.UsageError):
                client.pager("/anchor", look_ahead=look_ahead)
        with pytest.raises(sheaf.UsageError):
            client.pager("/anchor", look_ahead="2")
    assert stats(api)["log"] == []
