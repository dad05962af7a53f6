"""A Spark driver of its own for test_spark's killed-driver test: one run of a streaming query of
the test server's Stripe-shaped feed, sinking each batch into a file by batch id, so that the test
can SIGKILL it mid-batch and start it again from the same checkpoint.

usage: python stream_driver.py BASE_URL FEED CHECKPOINT SINK {available_now|processing} [STALL_BATCH]

- The sink (foreachBatch) writes SINK/batch-N.json (the batch's ids in order) by a rename, so a
  batch run again replaces its own file (the sink is idempotent by batch id, as Spark asks of a
  foreachBatch sink for exactly once), and appends each attempt to SINK/attempts.jsonl first.
- STALL_BATCH: as that batch reaches the sink (its end offset in the checkpoint's offset log, its
  commit not yet written), the driver writes SINK/stalled and sleeps (at most 300 s): the test
  kills it there.
- available_now: the run ends after what its first poll found; processing: a poll a second
  until killed (at most 300 s).

The token comes from the environment (SHEAF_TOKEN), as the test's own session has it.
"""

from __future__ import annotations

import json
import os
import sys
import time


def main(base_url: str, feed: str, checkpoint: str, sink: str, trigger: str, stall: int = -1) -> None:
    from pyspark.sql import SparkSession

    import sheaf.spark

    spark = (SparkSession.builder.master("local[2,2]").appName("sheaf-stream-driver")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    sheaf.spark.register(spark)

    def write(frame, batch_id: int) -> None:
        ids = [row.id for row in frame.select("id").collect()]
        with open(os.path.join(sink, "attempts.jsonl"), "a") as log:
            log.write(json.dumps({"batch": batch_id, "ids": ids}) + "\n")
            log.flush()
            os.fsync(log.fileno())
        if batch_id == stall:
            open(os.path.join(sink, "stalled"), "w").close()
            time.sleep(300)   # killed here
        part = os.path.join(sink, f".batch-{batch_id}.tmp")
        with open(part, "w") as out:
            json.dump(ids, out)
        os.replace(part, os.path.join(sink, f"batch-{batch_id}.json"))

    stream = (spark.readStream.format("sheaf").option("url", f"{base_url}/feed/stripe?feed={feed}&limit=10")
              .option("description", "stripe").option("until", "/created=0").option("id", "/id")
              .option("partitions", "2").schema("id string, created long").load())
    writer = stream.writeStream.foreachBatch(write).option("checkpointLocation", checkpoint)
    writer = writer.trigger(availableNow=True) if trigger == "available_now" else writer.trigger(processingTime="1 second")
    query = writer.start()
    query.awaitTermination(300)
    failure = query.exception()
    query.stop()
    spark.stop()
    if failure is not None:
        raise SystemExit(f"the query failed: {failure}")


if __name__ == "__main__":
    main(*sys.argv[1:6], *(int(arg) for arg in sys.argv[6:7]))
