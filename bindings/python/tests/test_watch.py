"""Watching a list (issue 46): Client.watch and `sheaf watch` against lists that grow while they
are polled (Tests/server/feeds.py): a Stripe-shaped newest-first list and an oldest-first feed
with an inclusive since filter. Every item once: across bursts in one second, inserts during a
poll, a server that ignores the filter, SIGKILLs and restarts; an idle poll costs one request."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from typing import Any, Dict, List

import pytest

import sheaf
from test_cli import REPO, cli_env

STRIPE = dict(preset="stripe", until=("/created", 0), id="/id")
EVENTS = dict(since=("since", "/created"), id="/id", items="/items", next="/next")


def control(api, path: str) -> Dict[str, Any]:
    with urllib.request.urlopen(f"{api.base_url}{path}", data=b"" if "insert" in path else None, timeout=10) as answer:
        return json.load(answer)


def insert(api, n: int, at: int, feed: str = "default") -> List[Any]:
    return control(api, f"/_feed/insert?feed={feed}&n={n}&at={at}")["ids"]


def requests(api) -> int:
    return api.state.snapshot()["requests"]


def stripe_id(number: int) -> str:
    return f"ch_{number:08d}"


def take_polls(watch: sheaf.Watch, count: int, between=None) -> List[sheaf.Poll]:
    """The first `count` polls of `watch` (committed), calling `between(k)` after poll k."""
    taken = []
    for poll in watch.polls():
        watch.commit(poll)
        taken.append(poll)
        if len(taken) == count:
            watch.stop()
        elif between is not None:
            between(len(taken))
    return taken


def test_a_newest_first_list_delivers_each_item_once_across_bursts_in_one_second(api):
    second = 1_700_000_000
    insert(api, 25, second)          # a burst: 25 items in one second, over three pages of 10
    insert(api, 3, second - 10)
    steps = {1: lambda: insert(api, 4, second),           # the same second as the last poll's newest
             2: lambda: insert(api, 12, second + 1),      # more than a page
             3: lambda: None}                             # nothing new
    with sheaf.Client(api.base_url) as client:
        watch = client.watch("/feed/stripe?limit=10", every=0.01, **STRIPE)
        polls = take_polls(watch, 4, lambda k: steps[k]())
    got = [[item["id"] for item in poll.items] for poll in polls]
    assert got[0] == [stripe_id(n) for n in range(25, 0, -1)] + [stripe_id(n) for n in (28, 27, 26)]
    assert got[1] == [stripe_id(n) for n in (32, 31, 30, 29)]
    assert got[2] == [stripe_id(n) for n in range(44, 32, -1)]
    assert got[3] == []
    offset = json.loads(watch.offset)
    assert offset["value"] == second + 1 and sorted(offset["seen"]) == sorted(stripe_id(n) for n in range(33, 45))
    assert "token" not in watch.offset and offset["list"].endswith("/feed/stripe?limit=10")


def test_an_idle_poll_costs_one_request(api):
    for second in range(30):
        insert(api, 1, 1_700_000_000 + second)
    insert(api, 2, 1_700_000_029)   # three in the newest second: all on page one
    with sheaf.Client(api.base_url) as client:
        watch = client.watch("/feed/stripe?limit=10", **STRIPE)
        watch.commit(watch.poll())
        before = requests(api)
        for _ in range(5):
            poll = watch.poll()
            assert len(poll) == 0
            watch.commit(poll)
        assert requests(api) - before == 5


def test_an_oldest_first_feed_with_an_inclusive_filter_delivers_each_item_once_even_when_the_filter_is_ignored(api):
    for ignore in ("", "&ignore_filter=1"):
        feed = f"events{len(ignore)}"
        insert(api, 5, 100, feed)
        insert(api, 3, 101, feed)
        with sheaf.Client(api.base_url) as client:
            watch = client.watch(f"/feed/events?feed={feed}&per_page=4{ignore}", every=0.01, **EVENTS)
            polls = take_polls(watch, 3, lambda k: insert(api, 2, 101, feed) if k == 1 else insert(api, 1, 102, feed))
        assert [[item["id"] for item in poll.items] for poll in polls] == [list(range(1, 9)), [9, 10], [11]], ignore


def test_the_state_file_keeps_the_offset_of_the_last_poll_whose_items_were_all_taken(api, tmp_path):
    insert(api, 3, 50)
    state = str(tmp_path / "w.state")
    with sheaf.Client(api.base_url) as client:
        watch = client.watch("/feed/stripe", state=state, every=0.01, **STRIPE)
        items = iter(watch)
        assert [next(items)["id"] for _ in range(3)] == [stripe_id(3), stripe_id(2), stripe_id(1)]
        assert not os.path.exists(state), "the poll is committed once the item after its last is asked for"
        insert(api, 1, 50)
        assert next(items)["id"] == stripe_id(4)
        stored = json.loads(open(state).read())
        assert stored["version"] == 1 and sorted(stored["offset"]["seen"]) == [stripe_id(n) for n in (1, 2, 3)]
        watch.close()
        # A new watch from the state goes on after what was taken whole: the fourth item comes
        # again (its poll was not finished), the first three do not.
        again = client.watch("/feed/stripe", state=state, **STRIPE)
        assert [item["id"] for item in again.poll().items] == [stripe_id(4)]
        again.close()


def test_async_iteration_yields_the_same_items(api):
    insert(api, 4, 10)

    async def main() -> List[str]:
        got: List[str] = []
        with sheaf.Client(api.base_url) as client:
            watch = client.watch("/feed/stripe?limit=3", every=0.01, **STRIPE)
            async for item in watch:
                got.append(item["id"])
                if len(got) == 4:
                    insert(api, 1, 11)
                if len(got) == 5:
                    watch.stop()
            watch.close()
        return got

    assert asyncio.run(main()) == [stripe_id(n) for n in (4, 3, 2, 1, 5)]


def test_a_poll_that_fails_for_a_passing_reason_is_waited_out_and_another_raises(api):
    waits: List[float] = []
    with sheaf.Client(api.base_url, max_attempts=1) as client:
        watch = client.watch("/status?code=503", until=("/created", 0), id="/id", every=0.01, max_every=0.04,
                             on_wait=lambda error, seconds: (waits.append(seconds), len(waits) == 4 and watch.stop()))
        assert list(watch.polls()) == []
        assert waits == [0.02, 0.04, 0.04, 0.04]
        with pytest.raises(sheaf.HTTPError) as raised:
            next(iter(client.watch("/status?code=404", until=("/created", 0), id="/id", every=0.01)))
        assert raised.value.status == 404


@pytest.mark.parametrize("keywords, message", [
    (dict(id="/id"), "a list that syncs"),
    (dict(until=("/created", 0)), "identity"),
    (dict(until=("/created", 0), id="/id", max_items=5), "max_items"),   # no budget: a poll cut short leaves a gap
    (dict(until=("/created", 0), id="/id", every=0), "every must be a positive number"),
])
def test_a_watch_that_cannot_deliver_each_item_once_is_refused(api, keywords, message):
    with sheaf.Client(api.base_url) as client:
        with pytest.raises(sheaf.UsageError) as raised:
            next(iter(client.watch("/feed/stripe", **keywords)))
        assert message in str(raised.value)


def test_an_offset_of_another_list_or_a_state_file_of_something_else_is_refused(api, tmp_path):
    insert(api, 2, 10)
    with sheaf.Client(api.base_url) as client:
        offset = client.watch("/feed/stripe?feed=a", **STRIPE).poll().offset
        with pytest.raises(sheaf.UsageError, match="of the list"):
            client.watch("/feed/stripe?feed=b", offset=offset, **STRIPE).poll()
        bad = tmp_path / "bad.state"
        bad.write_text('{"lists": {}}')
        with pytest.raises(sheaf.UsageError, match="not a watch's state"):
            client.watch("/feed/stripe", state=str(bad), **STRIPE)


# ---- sheaf watch ------------------------------------------------------------------------------

def watch_command(api, state, output, *extra: str) -> List[str]:
    return [sys.executable, "-m", "sheaf", "watch", f"{api.base_url}/feed/stripe?limit=7", "--preset", "stripe",
            "--until", "/created=0", "--state", str(state), "-o", str(output), "--every", "0.05", "-q", *extra]


def test_cli_watch_writes_every_item_once_across_sigkills_and_restarts(api, tmp_path):
    state, output = tmp_path / "w.state", tmp_path / "out.jsonl"
    stop = threading.Event()
    second = [1_700_000_000]

    def inserter() -> None:
        k = 0
        while not stop.is_set() and k < 400:   # bounded: at most 400 bursts
            insert(api, 3, second[0])          # three in one second, then the next second
            k += 1
            if k % 2 == 0:
                second[0] += 1
            time.sleep(0.01)

    thread = threading.Thread(target=inserter)
    thread.start()
    try:
        for round_ in range(3):
            proc = subprocess.Popen(watch_command(api, state, output), env=cli_env(), cwd=REPO,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            time.sleep(0.6 + 0.3 * round_)
            if round_ < 2:
                proc.kill()   # SIGKILL: no chance to finish the poll or write the state
                proc.wait(timeout=15)
                # As if the killed poll had written items without their state: cut back on restart.
                with open(output, "ab") as out:
                    out.write(b'{"id":"ch_torn"')
            else:
                stop.set()
                thread.join()
                time.sleep(0.5)   # a poll after the last insert
                proc.send_signal(signal.SIGTERM)
                _, err = proc.communicate(timeout=30)
                assert proc.returncode == 0, err
    finally:
        stop.set()
        thread.join()
    written = [json.loads(line)["id"] for line in output.read_text().splitlines()]
    everything = [stripe_id(item["id"]) for item in control(api, "/_feed/items")["items"]]
    assert len(written) == len(set(written)), "an item was written twice"
    assert sorted(written) == sorted(everything), "an item is missing"
    assert len(everything) > 30


def test_cli_watch_refuses_an_output_its_state_does_not_vouch_for(api, tmp_path):
    state, output = tmp_path / "w.state", tmp_path / "out.jsonl"
    output.write_text('{"id": "x"}\n')
    result = subprocess.run(watch_command(api, state, output), env=cli_env(), cwd=REPO, capture_output=True, timeout=60)
    assert result.returncode == 2 and b"no watch state vouches for" in result.stderr
    output.write_text("")
    insert(api, 3, 10)
    proc = subprocess.Popen(watch_command(api, state, output), env=cli_env(), cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not state.exists():   # bounded wait for the first poll
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 0
    output.write_text(output.read_text()[:5])   # cut by someone else: items would be missing
    result = subprocess.run(watch_command(api, state, output), env=cli_env(), cwd=REPO, capture_output=True, timeout=60)
    assert result.returncode == 1 and b"fewer than the" in result.stderr


def test_cli_watch_needs_a_list_that_syncs_and_a_state(api, tmp_path):
    base = [sys.executable, "-m", "sheaf", "watch", f"{api.base_url}/feed/stripe"]
    result = subprocess.run(base + ["--state", str(tmp_path / "s")], env=cli_env(), cwd=REPO, capture_output=True, timeout=60)
    assert result.returncode == 2 and b"a watch polls a list that syncs" in result.stderr
    result = subprocess.run(base + ["--until", "/created=0"], env=cli_env(), cwd=REPO, capture_output=True, timeout=60)
    assert result.returncode == 2 and b"--state" in result.stderr


def test_cli_get_with_a_state_and_an_id_delivers_an_item_added_in_the_same_second(api, tmp_path):
    # sheaf get's incremental sync keeps the ids seen at the stored value too (issue 46's rule).
    state = tmp_path / "get.state"
    get = [sys.executable, "-m", "sheaf", "get", f"{api.base_url}/feed/stripe?limit=2", "--preset", "stripe",
           "--until", "/created=0", "--id", "/id", "--state", str(state), "-q"]
    insert(api, 3, 500)
    first = subprocess.run(get, env=cli_env(), cwd=REPO, capture_output=True, timeout=60)
    assert first.returncode == 0, first.stderr
    assert len(first.stdout.splitlines()) == 3
    assert sorted(json.loads(state.read_text())["lists"].popitem()[1]["seen"]) == [stripe_id(n) for n in (1, 2, 3)]
    insert(api, 1, 500)
    second = subprocess.run(get, env=cli_env(), cwd=REPO, capture_output=True, timeout=60)
    assert [json.loads(line)["id"] for line in second.stdout.splitlines()] == [stripe_id(4)], second.stderr


def test_the_asyncio_client_watches_too(api):
    insert(api, 2, 10)

    async def main() -> List[str]:
        async with sheaf.AsyncClient(api.base_url) as client:
            watch = client.watch("/feed/stripe", every=0.01, **STRIPE)
            got = []
            async for item in watch:
                got.append(item["id"])
                if len(got) == 2:
                    watch.stop()
            watch.close()
            return got

    assert asyncio.run(main()) == [stripe_id(2), stripe_id(1)]
