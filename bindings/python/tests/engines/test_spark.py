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
