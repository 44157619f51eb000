"""Nothing acknowledged is lost across a kill -9 of the broker container (make compose-test).

Run in the tests image against broker:9092 while docker/compose-test.sh kills the broker container
with SIGKILL and starts it again. An idempotent acks=all producer sends `--records` numbered records
at a bounded rate (so the kill lands mid-stream), printing `acked N` lines the script watches; it
keeps going through the outage (librdkafka retries within message.timeout.ms). Then a consumer reads
the topic back and the check is: every acknowledged record is there exactly once, no record appears
twice, none failed for good. Exit 0 and a PASS line, else exit 1 with the counts. (The caller checks
from the `acked` lines that the kill landed mid-run: acknowledgements before it and after the restart.)
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--bootstrap-servers", default="broker:9092")
    p.add_argument("--records", type=int, default=40_000)
    p.add_argument("--rate", type=int, default=2_000, help="records per second")
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--deadline-s", type=float, default=240.0)
    args = p.parse_args()
    topic = f"restart-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": args.bootstrap_servers})
    admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(30)

    acked: dict[int, tuple[int, int]] = {}  # record number -> (partition, offset)
    failed: list[str] = []

    def on_delivery(err: KafkaError | None, msg: object) -> None:
        n = int(msg.key())  # type: ignore[attr-defined]
        if err is not None:
            failed.append(f"{n}: {err}")
        else:
            acked[n] = (msg.partition(), msg.offset())  # type: ignore[attr-defined]

    producer = Producer({"bootstrap.servers": args.bootstrap_servers, "enable.idempotence": True,
                         "acks": "all", "linger.ms": 5, "message.timeout.ms": 180_000,
                         "reconnect.backoff.max.ms": 500})
    start = time.monotonic()
    last_print = 0.0
    for n in range(args.records):
        # bounded rate: record n is due at start + n / rate
        while time.monotonic() < start + n / args.rate:
            producer.poll(0.01)
        while True:
            try:
                producer.produce(topic, key=str(n).encode(), value=f"record-{n}".encode(),
                                 on_delivery=on_delivery)
                break
            except BufferError:  # local queue full during the outage: wait for room
                producer.poll(0.1)
        now = time.monotonic()
        if now - last_print >= 0.5:
            print(f"acked {len(acked)} sent {n + 1}", flush=True)
            last_print = now
        if now - start > args.deadline_s:
            print(f"FAIL: still producing after {args.deadline_s} s", flush=True)
            return 1
    left = producer.flush(180)
    print(f"acked {len(acked)} sent {args.records} (flushed, {left} left)", flush=True)

    # Read everything back (plain consumer from the beginning, up to each partition's end).
    consumer = Consumer({"bootstrap.servers": args.bootstrap_servers, "group.id": f"check-{topic}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, i, 0) for i in range(args.partitions)])
        seen: dict[int, list[tuple[int, int]]] = {}
        at_eof: set[int] = set()
        read_deadline = time.monotonic() + 120
        while len(at_eof) < args.partitions and time.monotonic() < read_deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    at_eof.add(msg.partition())
                    continue
                print(f"consumer error: {msg.error()}", flush=True)
                continue
            seen.setdefault(int(msg.key()), []).append((msg.partition(), msg.offset()))
    finally:
        consumer.close()

    lost = [n for n in acked if n not in seen]
    moved = [n for n, where in acked.items() if n in seen and where not in seen[n]]
    duplicated = [n for n, where in seen.items() if len(where) > 1]
    report = (f"{len(acked)} acknowledged, {sum(len(v) for v in seen.values())} read back, "
              f"{len(lost)} lost, {len(moved)} at another offset, {len(duplicated)} duplicated, "
              f"{len(failed)} failed")
    if lost or moved or duplicated or failed or len(acked) != args.records or len(at_eof) < args.partitions:
        print(f"FAIL: {report}; first lost {lost[:5]} duplicated {duplicated[:5]} failed {failed[:3]}",
              flush=True)
        return 1
    print(f"PASS: {report}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
