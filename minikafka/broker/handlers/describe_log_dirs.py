"""DescribeLogDirs (API 35): the one data directory, its partitions' sizes and the disk's total and
usable bytes (kafka-log-dirs.sh, Admin.describeLogDirs).

Kafka: ReplicaManager.describeLogDirs. Topics null means every partition (internal topics included);
named topics or partitions that do not exist are left out, not reported as errors. One node, no
replicas: offset_lag is 0 and no partition is a future replica; the directory is never cordoned.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, ClassVar

from minikafka.broker.context import RequestContext
from minikafka.broker.services import BrokerServices
from minikafka.protocol import messages
from minikafka.protocol.errors import ErrorCode
from minikafka.protocol.types import ZERO_MS, TopicPartition


@dataclass(frozen=True, slots=True)
class DescribeLogDirsHandler:
    api_key: ClassVar[int] = 35
    svc: BrokerServices

    async def __call__(self, ctx: RequestContext, req: Any) -> messages.DescribeLogDirsResponse:
        logs = self.svc.logs
        wanted: list[TopicPartition]
        if req.topics is None:
            # every partition of every topic: one not opened yet is opened (made) by get()
            wanted = [TopicPartition(name, p) for name in sorted(logs.topics) for p in range(logs.topics[name].partitions)]
        else:
            wanted = [TopicPartition(t.topic, p) for t in req.topics for p in t.partitions]
        by_topic: dict[str, list[Any]] = {}
        for tp in dict.fromkeys(wanted):
            plog = logs.get(tp)
            if plog is None:
                continue
            by_topic.setdefault(tp.topic, []).append(messages.DescribeLogDirsPartition(
                partition_index=tp.partition, partition_size=plog.size_in_bytes, offset_lag=0,
                is_future_key=False))
        try:
            st = os.statvfs(logs.data_dir)
            total, usable = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
            code = ErrorCode.none
        except OSError:
            total = usable = -1
            code = ErrorCode.kafka_storage_error
        result = messages.DescribeLogDirsResult(
            error_code=code, log_dir=str(logs.data_dir.resolve()),
            topics=tuple(messages.DescribeLogDirsTopic(name=name, partitions=tuple(parts))
                         for name, parts in by_topic.items()),
            total_bytes=total, usable_bytes=usable, is_cordoned=False)
        return messages.DescribeLogDirsResponse(throttle_time=ZERO_MS, error_code=ErrorCode.none, results=(result,))
