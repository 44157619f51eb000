"""One transaction over two partitions plus a group's offsets, for crash tests (a child process
the test can kill: librdkafka may block past its API timeouts when the broker dies mid-call).

    python txn_driver.py BOOTSTRAP TRANSACTIONAL_ID TOPIC GROUP commit|abort
Prints {"stage": "initialised"} and finally {"succeeded": true|false, "error": ...}.
"""

from __future__ import annotations

import json
import sys

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def main() -> int:
    bootstrap, txn_id, topic, group, ending = sys.argv[1:6]
    group_consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "transaction.timeout.ms": 20000,
                  "message.timeout.ms": 5000, "metadata.recovery.strategy": "none"})
    p.init_transactions(30)
    print(json.dumps({"stage": "initialised"}), flush=True)
    try:
        p.begin_transaction()
        p.produce(topic, value=b"r0", partition=0)
        p.produce(topic, value=b"r1", partition=1)
        p.flush(5)
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 42)], group_consumer.consumer_group_metadata(), 5)
        if ending == "commit":
            p.commit_transaction(5)
        else:
            p.abort_transaction(5)
    except KafkaException as exc:
        print(json.dumps({"succeeded": False, "error": str(exc)}), flush=True)
        return 0
    print(json.dumps({"succeeded": True}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
