"""sheaf.spark: a list read by Spark local[2] through the `sheaf` data source is the list, exactly."""

from __future__ import annotations

import json

import pytest
from .engine_lists import (ADDRESSED, CLIENT_OPTIONS, LISTS, OTHER_SECRET, SECRET, SPLIT, asked_again,
                           assert_read_within_budget, authorizations, rows_json, secret_free, split_list)


def _reader(spark, server, path: str, partitions: int = 8):
    read = spark.read.format("sheaf").option("url", f"{server.base_url}{path}").option("partitions", partitions)
    for name, value in CLIENT_OPTIONS.items():
        read = read.option(name, value)
    return read


@pytest.mark.parametrize("name", sorted(LISTS))
def test_the_partitions_read_by_spark_are_the_list_exactly(spark, api, whole_lists, name: str) -> None:
    frame = _reader(spark, api, LISTS[name]).load()
    assert frame.schema.simpleString() == "struct<id:bigint,name:string>"
    assert frame.rdd.getNumPartitions() == (8 if name in ADDRESSED else 1)
    assert rows_json(frame.toArrow()) == whole_lists[name]
    assert_read_within_budget(api, pages_at_least=100)


def test_a_schema_given_converts_and_a_description_pins_the_shape(spark, api) -> None:
    frame = (_reader(spark, api, "/conv/github?n=2000&per_page=100", partitions=3)
             .option("description", "github").schema("name string, id double, missing string").load())
    rows = frame.orderBy("id").collect()
    assert [row.id for row in rows] == [float(i) for i in range(2000)]
    assert rows[5].name == "item-5" and rows[5].missing is None
    pinned = json.dumps({"preset": "anchor"})
    assert _reader(spark, api, "/anchor?n=300&per_page=50", 2).option("description", pinned).load().count() == 300


def test_a_failed_partition_is_run_again_alone(spark, api) -> None:
    # Page 12's first request fails with a 500; with one attempt per request, partition 3 of 4
    # (pages 11 to 15) fails, and Spark runs that task again, and no other.
    path = "/anchor?n=2000&per_page=100&fail=12:1:500"
    frame = _reader(spark, api, path, partitions=4).option("max_attempts", 1).load()
    assert sorted(row.id for row in frame.collect()) == list(range(2000))   # (orderBy would read it twice)
    again = asked_again(api, "page")   # beyond page one's window, read when planning too
    assert 12 in again and all(11 <= page <= 15 for page in again), again


def test_the_token_is_read_from_the_variable_token_env_names(spark, api) -> None:
    frame = _reader(spark, api, "/anchor?n=1000&per_page=100", 2).option("token_env", "SHEAF_OTHER_TOKEN").load()
    assert frame.count() == 1000
    assert set(authorizations(api)) == {f"Bearer {OTHER_SECRET}"}


def test_a_refused_request_fails_the_read_without_showing_the_token(spark, api, capfd) -> None:
    # Planned, then a task refused: page 7 (the second partition's) is answered 401 every time.
    frame = _reader(spark, api, "/anchor?n=1000&per_page=100&fail=7:100:401", 2).schema("id long").load()
    with pytest.raises(Exception) as failed:
        frame.count()
    assert "401" in str(failed.value)
    out, err = capfd.readouterr()
    secret_free((str(failed.value) + out + err).encode(), "the error or the logs")


def test_the_url_may_be_given_to_load(spark, api) -> None:
    frame = spark.read.format("sheaf").option("partitions", 3).load(f"{api.base_url}/anchor?n=500&per_page=50")
    assert frame.count() == 500 and frame.rdd.getNumPartitions() == 3


def test_options_are_checked_on_the_driver(spark, api) -> None:
    with pytest.raises(Exception, match="option at_once must be 1 or more"):
        spark.read.format("sheaf").option("url", f"{api.base_url}/anchor").option("at_once", 0).load()
    with pytest.raises(Exception, match="unknown option.*parts"):
        spark.read.format("sheaf").option("url", f"{api.base_url}/anchor").option("parts", 2).load()
    with pytest.raises(Exception, match="may not carry a credential"):
        (spark.read.format("sheaf").option("url", f"{api.base_url}/anchor")
         .option("headers", json.dumps({"Authorization": "Bearer x"})).load())


def test_no_token_is_in_the_data_source_its_reader_or_partitions(api) -> None:
    import cloudpickle
    from pyspark.sql.types import LongType, StructField, StructType

    from sheaf.spark import ListDataSource

    source = ListDataSource({"url": f"{api.base_url}/anchor?n=1000&per_page=100", "partitions": "4",
                             "headers": json.dumps({"X-Trace": "t"}), **{k: str(v) for k, v in CLIENT_OPTIONS.items()}})
    reader = source.reader(StructType([StructField("id", LongType())]))
    partitions = reader.partitions()
    assert len(partitions) == 4
    assert [p.value.window for p in partitions] == [1] * 4, "the window (4) shared by all 4: at_once not given"
    told = ListDataSource({"url": f"{api.base_url}/anchor?n=1000&per_page=100", "partitions": "4", "at_once": "2",
                           **{k: str(v) for k, v in CLIENT_OPTIONS.items()}})
    assert [p.value.window for p in told.reader(StructType([StructField("id", LongType())])).partitions()] == [2] * 4
    for what, thing in (("the data source", source), ("the reader", reader), ("a partition", partitions)):
        secret_free(cloudpickle.dumps(thing), what)
    assert sum(batch.num_rows for p in partitions for batch in reader.read(p)) == 1000
    assert SECRET not in repr(source.__dict__)


def test_a_cursor_list_with_a_range_filter_is_read_by_spark_in_ranges_each_item_once(spark, api) -> None:
    expected = split_list(api)
    frame = _reader(spark, api, SPLIT, partitions=4).option("description", "stripe").load()
    assert frame.rdd.getNumPartitions() == 4
    assert sorted(row["id"] for row in frame.select("id").collect()) == sorted(expected)
    assert len(expected) == 20000


# ---- streams (spark.readStream): a list that grows, each item once across runs and restarts -----

#: The schema of the test server's Stripe-shaped feed (Tests/server/feeds.py).
FEED_SCHEMA = "id string, object string, created long, inserted_at double"
#: Seconds a streaming query may take to end (AvailableNow) or to deliver what was added.
QUERY_SECONDS = 180


def _insert(api, feed: str, n: int, at: int):
    """Adds `n` items created in second `at` to `feed`; their ids (ch_00000001, ...)."""
    import urllib.request

    with urllib.request.urlopen(f"{api.base_url}/_feed/insert?feed={feed}&n={n}&at={at}", timeout=10) as answer:
        return json.load(answer)["stripe_ids"]


def _feed_items(api, feed: str):
    """The feed's items as the server holds them: {"id" (as the list names it), "number", "created"}."""
    import urllib.request

    with urllib.request.urlopen(f"{api.base_url}/_feed/items?feed={feed}", timeout=10) as answer:
        return [{"id": f"ch_{item['id']:08d}", "number": item["id"], "created": item["created"]}
                for item in json.load(answer)["items"]]


def _feed_ids(api, feed: str):
    import urllib.request

    with urllib.request.urlopen(f"{api.base_url}/_feed/items?feed={feed}", timeout=10) as answer:
        return sorted(f"ch_{item['id']:08d}" for item in json.load(answer)["items"])


#: The stripe preset without its range filter: a batch is then fetched by a poll in the driver.
UNSPLIT = json.dumps({"preset": "stripe", "split": None})


def _stream(spark, api, feed: str, description: str = "stripe", **options):
    """A stream of `feed`: newest first, ten a page, synced by /created from the start, by /id;
    with the stripe preset's range filter, its batches are ranges the tasks fetch."""
    read = (spark.readStream.format("sheaf").option("url", f"{api.base_url}/feed/stripe?feed={feed}&limit=10")
            .option("description", description).option("until", "/created=0").option("id", "/id"))
    for name, value in {**CLIENT_OPTIONS, **options}.items():
        read = read.option(name, value)
    return read


def _ended(query, seconds: float = QUERY_SECONDS) -> None:
    """Waits for an AvailableNow query to end by itself (at most `seconds`: else it is stopped and
    the test fails); its failure is raised."""
    try:
        ended = query.awaitTermination(seconds)
    finally:
        if query.isActive:
            query.stop()
    assert ended, f"the query did not end within {seconds} s"


def test_a_stream_delivers_each_item_once_into_a_table_across_runs_with_available_now(spark, api, tmp_path) -> None:
    feed, second = "runs", 1_700_000_000
    ids = _insert(api, feed, 5, second) + _insert(api, feed, 3, second + 1)
    out, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")
    frame = _stream(spark, api, feed).load()   # the schema read from the first page
    assert frame.isStreaming and frame.schema.simpleString() == "struct<id:string,object:string,created:bigint,inserted_at:double>"

    def run() -> int:
        """One run of the query from the checkpoint, until what was there as it started; the rows it read."""
        query = (frame.writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        _ended(query)
        return sum(progress["numInputRows"] for progress in query.recentProgress)

    def table():
        return sorted(row.id for row in spark.read.parquet(out).select("id").collect())

    assert run() == 8 and table() == sorted(ids)
    # More in the second of the newest delivered (a poll must go past those seen there), and more
    # than a page in the next.
    ids += _insert(api, feed, 4, second + 1) + _insert(api, feed, 12, second + 2)
    assert run() == 16, "the second run reads what is new since the checkpoint, and only that"
    ids += _insert(api, feed, 1, second + 2)
    assert run() == 1
    assert run() == 0, "nothing new: no rows"
    assert table() == sorted(ids) == _feed_ids(api, feed), "every item in the table once"
    # Spark's offset log: the polls' offsets, the list's URL and the items' values, no token.
    logged = [path.read_bytes() for path in (tmp_path / "checkpoint" / "offsets").iterdir() if path.name.isdigit()]
    assert len(logged) == 3, "one batch a run that found something new"
    secret_free(b"".join(logged), "the checkpoint's offsets")
    last = json.loads(max((path for path in (tmp_path / "checkpoint" / "offsets").iterdir() if path.name.isdigit()),
                          key=lambda path: int(path.name)).read_text().splitlines()[-1])
    assert last["sheaf_watch"] == 1 and last["offset"]["value"] == second + 2
    assert sorted(last["offset"]["seen"]) == sorted(ids[-13:]), "the identities at the greatest value delivered"


def test_a_stream_batch_planned_before_a_crash_is_read_again_as_it_was_when_the_query_restarts(spark, api, tmp_path) -> None:
    from pyspark.errors import StreamingQueryException

    feed, second = "replay", 1_700_100_000
    checkpoint = str(tmp_path / "checkpoint")
    attempts = []   # (batch id, its ids in order), each attempt of a batch
    written = {}    # the sink: batch id -> ids, written once a batch succeeds (idempotent by batch id)
    during = []     # added while batch 0 ran: after what Trigger.AvailableNow's first run reads

    def sink(frame, batch_id: int) -> None:
        ids = [row.id for row in frame.select("id").collect()]
        attempts.append((batch_id, ids))
        if batch_id == 0:
            during.extend(_insert(api, feed, 2, second))
        if batch_id == 1 and sum(1 for batch, _ in attempts if batch == 1) == 1:
            # Batch 1's end offset is in Spark's offset log, its commit is not: a crash there.
            raise RuntimeError("the sink fails batch 1 once")
        written[batch_id] = ids

    def start():
        return (_stream(spark, api, feed, UNSPLIT, partitions=3).schema(FEED_SCHEMA).load().writeStream.foreachBatch(sink)
                .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())

    first = _insert(api, feed, 6, second)
    _ended(start())
    assert [batch for batch, _ in attempts] == [0], "the run ended after what was there as it started"
    planned = during + _insert(api, feed, 3, second) + _insert(api, feed, 11, second + 1)
    query = start()
    try:
        with pytest.raises(StreamingQueryException, match="the sink fails batch 1 once"):
            query.awaitTermination(QUERY_SECONDS)
    finally:
        if query.isActive:
            query.stop()
    # Added after the crash, some in the second of batch 1's newest: not batch 1's, which is read
    # again through its end offset, but the next batch's.
    after = _insert(api, feed, 2, second + 1) + _insert(api, feed, 4, second + 2)
    _ended(start())
    assert [batch for batch, _ in attempts] == [0, 1, 1, 2]
    assert attempts[2][1] == attempts[1][1], "batch 1 again, item for item, in the list's order"
    assert sorted(written[0]) == sorted(first)
    assert sorted(written[1]) == sorted(planned)
    assert sorted(written[2]) == sorted(after)
    everything = [item for batch in sorted(written) for item in written[batch]]
    assert len(everything) == len(set(everything)) == 28 and sorted(everything) == _feed_ids(api, feed)


def _driver(api, feed: str, checkpoint, sink, trigger: str, stall: int = -1):
    """stream_driver.py in a process group of its own (the driver and its JVM): a Popen."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).with_name("stream_driver.py")
    return subprocess.Popen([sys.executable, str(script), api.base_url, feed, str(checkpoint), str(sink), trigger,
                             str(stall)], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_for(what, seconds: float, driver) -> None:
    """Waits (at most `seconds`) for `what()` while `driver` runs; fails with its stderr if it ended."""
    import time

    deadline = time.monotonic() + seconds
    while not what():   # bounded
        if driver.poll() is not None:
            raise AssertionError(f"the driver ended ({driver.returncode}): {driver.stderr.read().decode()[-2000:]}")
        assert time.monotonic() < deadline, f"not within {seconds} s"
        time.sleep(0.2)


def test_a_stream_restarted_after_its_driver_was_killed_mid_batch_delivers_each_item_once(api, tmp_path) -> None:
    import os
    import signal

    feed, second = "killed", 1_700_500_000
    checkpoint, sink = tmp_path / "checkpoint", tmp_path / "sink"
    sink.mkdir()
    ids = _insert(api, feed, 6, second)
    driver = _driver(api, feed, checkpoint, sink, "processing", stall=1)
    try:
        _wait_for(lambda: (sink / "batch-0.json").exists(), QUERY_SECONDS, driver)
        ids += _insert(api, feed, 3, second) + _insert(api, feed, 14, second + 1)   # batch 1's (or 2's)
        _wait_for(lambda: (sink / "stalled").exists(), QUERY_SECONDS, driver)
        # Batch 1 is planned (its end offset logged) and not committed: the driver dies here,
        # the JVM with it. Items added now, some in the second of batch 1's newest, are not batch 1's.
        later = _insert(api, feed, 2, second + 1) + _insert(api, feed, 5, second + 2)
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(60)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(60)
    assert driver.returncode == -signal.SIGKILL
    assert not (sink / "batch-1.json").exists() and not (checkpoint / "commits" / "1").exists()
    restarted = _driver(api, feed, checkpoint, sink, "available_now")
    try:
        assert restarted.wait(QUERY_SECONDS) == 0, restarted.stderr.read().decode()[-2000:]
    finally:
        if restarted.poll() is None:
            os.killpg(restarted.pid, signal.SIGKILL)
    attempts = [json.loads(line) for line in (sink / "attempts.jsonl").read_text().splitlines()]
    assert [attempt["batch"] for attempt in attempts] == [0, 1, 1, 2]
    assert attempts[2]["ids"] == attempts[1]["ids"], "batch 1 read again as it was planned, in the list's order"
    written = {n: json.loads((sink / f"batch-{n}.json").read_text()) for n in range(3)}
    assert sorted(written[0]) == sorted(ids[:6]) and written[1] == attempts[1]["ids"]
    assert not set(later) & set(written[1]), "what was added after batch 1 was planned is not in it"
    assert sorted(written[2]) == sorted(set(ids + later) - set(written[0]) - set(written[1]))
    everything = [item for n in range(3) for item in written[n]]
    assert len(everything) == len(set(everything)) == 30 and sorted(everything) == _feed_ids(api, feed)
    secret_free(b"".join(path.read_bytes() for path in (checkpoint / "offsets").iterdir() if path.is_file()),
                "the checkpoint's offsets")


def test_a_stream_with_a_processing_time_trigger_delivers_what_is_added_while_it_runs(spark, api, tmp_path) -> None:
    import time

    feed, second = "live", 1_700_200_000
    batches = []   # (batch id, ids)
    expected = _insert(api, feed, 4, second)
    query = (_stream(spark, api, feed).schema(FEED_SCHEMA).load().writeStream
             .foreachBatch(lambda frame, batch_id: batches.append((batch_id, [row.id for row in frame.select("id").collect()])))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(processingTime="1 second").start())

    def delivered():
        return sorted(item for _, ids in batches for item in ids)

    def wait_for(ids) -> None:
        deadline = time.monotonic() + QUERY_SECONDS
        while delivered() != sorted(ids) and time.monotonic() < deadline and query.isActive:   # bounded
            time.sleep(0.2)
        assert delivered() == sorted(ids), f"delivered {len(delivered())} of {len(ids)}"

    try:
        wait_for(expected)
        expected += _insert(api, feed, 3, second)          # the same second as the newest delivered
        wait_for(expected)
        expected += _insert(api, feed, 15, second + 1)     # more than a page
        wait_for(expected)
        expected += _insert(api, feed, 2, second + 2)      # the newest second's items all on page one
        wait_for(expected)
        count, logged = len(batches), len(api.state.snapshot()["log"])
        time.sleep(3.5)   # idle: a poll a trigger, each one request (page one), and no batch
        idle = [entry["path"] for entry in api.state.snapshot()["log"][logged:] if not entry["path"].startswith("/_")]
        assert len(batches) == count, "an idle poll plans no batch"
        assert 2 <= len(idle) <= 5 and set(idle) == {f"/feed/stripe?feed={feed}&limit=10"}, idle
    finally:
        query.stop()
    assert query.exception() is None
    ids = [item for _, items in batches for item in items]
    assert len(ids) == len(set(ids)) == 24 and sorted(ids) == _feed_ids(api, feed)


def _refused(frame, tmp_path, name: str, match: str) -> None:
    """A query of the stream `frame` fails as it starts (start() or soon after), with `match`."""
    query = None
    try:
        with pytest.raises(Exception, match=match):
            query = (frame.writeStream.format("memory").queryName(name)
                     .option("checkpointLocation", str(tmp_path / name)).trigger(availableNow=True).start())
            query.awaitTermination(QUERY_SECONDS)
    finally:
        if query is not None and query.isActive:
            query.stop()


def test_a_stream_of_a_list_that_does_not_sync_is_refused_with_what_to_give(spark, api, tmp_path) -> None:
    _insert(api, "nosync", 2, 1_700_300_000)
    frame = (spark.readStream.format("sheaf").option("url", f"{api.base_url}/feed/stripe?feed=nosync")
             .option("description", "stripe").schema(FEED_SCHEMA).load())
    _refused(frame, tmp_path, "nosync",
             r"the sheaf stream polls a list that syncs, and this one, as described, does not: "
             r"give \.option\(\"until\", \"/created=0\"\) for a newest-first list")
    assert not [entry for entry in api.state.snapshot()["log"] if entry["path"].startswith("/feed/")], \
        "refused before any poll"


def test_stream_options_are_checked(spark, api, tmp_path) -> None:
    url = f"{api.base_url}/feed/stripe?feed=empty"

    def stream(**options):
        read = spark.readStream.format("sheaf").option("url", url).option("description", "stripe")
        for name, value in options.items():
            read = read.option(name, value)
        return read

    _refused(stream(until="created").schema(FEED_SCHEMA).load(), tmp_path, "until", "option until must be PTR=START")
    _refused(stream(since_param="created[gte]").schema(FEED_SCHEMA).load(), tmp_path, "since",
             "since_param and since_field go together")
    with pytest.raises(Exception, match="are for a stream"):
        spark.read.format("sheaf").option("url", url).option("until", "/created=0").schema(FEED_SCHEMA).load().count()
    # A list with no item yet and no schema given: nothing to read a schema from.
    _refused(stream(until="/created=0").load(), tmp_path, "schemaless", "the sheaf stream needs a schema")


def test_no_token_is_in_the_stream_reader_its_offsets_or_partitions_and_a_range_reads_again_as_it_was(api) -> None:
    import cloudpickle
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from sheaf.spark import ListDataSource

    feed, second = "unit", 1_700_400_000
    _insert(api, feed, 7, second)
    source = ListDataSource({"url": f"{api.base_url}/feed/stripe?feed={feed}&limit=3", "description": "stripe",
                             "until": "/created=0", "partitions": "3", "headers": json.dumps({"X-Trace": "t"})})
    schema = StructType([StructField("id", StringType()), StructField("created", LongType())])
    reader = source.streamReader(schema)
    start = reader.initialOffset()
    assert start == {"sheaf_watch": 1, "offset": None}
    end = json.loads(json.dumps(reader.latestOffset(start, None)))   # as Spark hands it back
    assert end["offset"]["value"] == second and len(end["offset"]["seen"]) == 7
    assert reader.latestOffset(end, None) == end, "an idle poll: the same offset"
    polls = len(authorizations(api))
    parts = reader.partitions(start, end)
    assert len(authorizations(api)) == polls, "the batch is the poll's items: no request"
    assert [part.count for part in parts] == [2, 2, 3]
    rows = [row for part in parts for batch in reader.read(part) for row in batch.to_pylist()]
    assert [row["id"] for row in rows] == [f"ch_{n:08d}" for n in range(7, 0, -1)], "the list's order, each once"
    assert set(authorizations(api)) == {f"Bearer {SECRET}"}
    # A reader of a restarted query: the range read again, and no later item in it.
    _insert(api, feed, 2, second)
    again = source.streamReader(schema)
    replayed = again.partitions(start, end)
    assert [row["id"] for part in replayed for batch in again.read(part) for row in batch.to_pylist()] == \
        [row["id"] for row in rows]
    after = again.latestOffset(end, None)
    assert [row["id"] for part in again.partitions(end, after) for batch in again.read(part)
            for row in batch.to_pylist()] == ["ch_00000009", "ch_00000008"]
    for what, thing in (("the data source", source), ("the reader", reader), ("an offset", [start, end, after]),
                        ("a partition", parts)):
        secret_free(cloudpickle.dumps(thing), what)
    shipped = cloudpickle.loads(cloudpickle.dumps(reader))   # as a task gets it: no client, no polls
    assert shipped._watch is None and not shipped._polls
    assert sum(batch.num_rows for part in parts for batch in shipped.read(part)) == 7
    reader.stop()
    again.stop()


def test_a_stream_batch_is_cut_into_ranges_the_tasks_fetch_and_latest_offset_asks_one_page(api) -> None:
    """A list with a range filter (the stripe preset's created[gte]/created[lt]): latestOffset
    reads page one alone, and the batch is ranges of the field that the tasks fetch, each item in
    one; also against a server that ignores the filter, and a burst above a page (a poll then)."""
    import cloudpickle
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from sheaf.spark import ItemsPartition, ListDataSource, RangePartition

    schema = StructType([StructField("id", StringType()), StructField("created", LongType())])

    def paths(since: int):
        return [entry["path"] for entry in api.state.snapshot()["log"][since:] if not entry["path"].startswith("/_")]

    def rows(reader, parts):
        return [row["id"] for part in parts for batch in cloudpickle.loads(cloudpickle.dumps(reader)).read(part)
                for row in batch.to_pylist()]

    for feed, ignored in (("cut", ""), ("cut-ignored", "&ignore_filter=1")):
        second = 1_700_600_000
        newest = _insert(api, feed, 4, second + 20)
        ids = _insert(api, feed, 7, second) + newest
        ids += _insert(api, feed, 3, second + 6) + _insert(api, feed, 2, second + 13)   # at the cuts
        source = ListDataSource({"url": f"{api.base_url}/feed/stripe?feed={feed}&limit=10{ignored}",
                                 "description": "stripe", "until": f"/created={second}", "partitions": "3"})
        reader = source.streamReader(schema)
        start, logged = reader.initialOffset(), len(api.state.snapshot()["log"])
        end = json.loads(json.dumps(reader.latestOffset(start, None)))
        assert paths(logged) == [f"/feed/stripe?feed={feed}&limit=10{ignored}"], "latestOffset: page one alone"
        assert end["offset"]["value"] == second + 20 and sorted(end["offset"]["seen"]) == sorted(newest)
        logged = len(api.state.snapshot()["log"])
        parts = reader.partitions(start, end)
        assert not paths(logged), "planning the batch sends nothing"
        assert all(isinstance(part, RangePartition) for part in parts) and len(parts) == 3
        assert [(part.low, part.high) for part in parts] == [(second + 14, second + 20), (second + 7, second + 13),
                                                              (second, second + 6)]
        delivered = rows(reader, parts)
        assert delivered == [item["id"] for item in sorted(_feed_items(api, feed), key=lambda item: (-item["created"], -item["number"]))], \
            "each item once, in the list's order (newest first)"
        asked = paths(logged)
        assert all("created%5Bgte%5D=" in path or "created[gte]=" in path for path in asked), asked
        # More at the batch's newest second (not in its seen: new) and after it.
        more = _insert(api, feed, 2, second + 20) + _insert(api, feed, 3, second + 25)
        logged = len(api.state.snapshot()["log"])
        after = json.loads(json.dumps(reader.latestOffset(end, None)))
        assert len(paths(logged)) == 1 and after["offset"]["value"] == second + 25
        assert sorted(rows(reader, reader.partitions(end, after))) == sorted(more)
        logged = len(api.state.snapshot()["log"])
        assert reader.latestOffset(after, None) == after and len(paths(logged)) == 1, "idle: one request, no batch"
        # A burst above a page in one second: page one cannot tell its end, the batch is a poll.
        burst = _insert(api, feed, 12, second + 30)
        last = reader.latestOffset(after, None)
        parts = reader.partitions(after, last)
        assert all(isinstance(part, ItemsPartition) for part in parts)
        assert sorted(rows(reader, parts)) == sorted(burst)
        # The ranges again, as a restarted query plans them from its offset log: the same items.
        again = source.streamReader(schema)
        assert sorted(rows(again, again.partitions(start, end))) == sorted(ids)
        for thing in (parts, again.partitions(start, end), [start, end, after, last]):
            secret_free(cloudpickle.dumps(thing), "a partition or an offset")
        reader.stop()
        again.stop()
