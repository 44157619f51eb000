"""The group coordinator over `__consumer_offsets`, built from the broker's properties.

Kafka creates `__consumer_offsets` on the first FindCoordinator for a group (or the first commit),
with `offsets.topic.num.partitions` partitions, `cleanup.policy=compact`, `compression.type=
producer` and `segment.bytes=offsets.topic.segment.bytes` (GroupCoordinatorConfig,
`GroupCoordinatorService.groupMetadataTopicConfigs`). Records are written as one uncompressed batch
per operation with producer id -1, acks=all, which on one node means: written to the segment
before the client is answered.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping

from minikafka.broker.internal_topic import InternalTopicLog
from minikafka.config import BrokerConfig
from minikafka.coordinator.consumer_group.coordinator import ConsumerGroups
from minikafka.coordinator.consumer_group.decisions import ConsumerGroupConfig
from minikafka.coordinator.group.coordinator import GroupCoordinator
from minikafka.coordinator.group.decisions import GroupConfig
from minikafka.coordinator.group.offsets_log import TOPIC as OFFSETS_TOPIC
from minikafka.coordinator.share_group import state_log as share_state_log
from minikafka.coordinator.share_group.coordinator import ShareGroups
from minikafka.coordinator.share_group.decisions import ShareGroupConfig
from minikafka.coordinator.share_group.share_coordinator import ShareCoordinator
from minikafka.coordinator.streams_group.coordinator import StreamsGroups
from minikafka.coordinator.streams_group.decisions import StreamsGroupConfig
from minikafka.storage.log_manager import LogManager
from minikafka.topic_config import segment_size_config


def build_group_coordinator(config: BrokerConfig, logs: LogManager) -> GroupCoordinator:
    """The group coordinator over `__consumer_offsets`, configured from the broker's properties."""
    records_log = InternalTopicLog(logs, OFFSETS_TOPIC, partitions=int(config["offsets.topic.num.partitions"]),
                                   configs={"cleanup.policy": "compact", "compression.type": "producer",
                                            **segment_size_config(int(config["offsets.topic.segment.bytes"]))},
                                   base_sequence=0)
    group_config = GroupConfig(
        min_session_timeout_ms=int(config["group.min.session.timeout.ms"]),
        max_session_timeout_ms=int(config["group.max.session.timeout.ms"]),
        initial_rebalance_delay_ms=int(config["group.initial.rebalance.delay.ms"]),
        max_size=int(config["group.max.size"]),
    )
    consumer_config = ConsumerGroupConfig(
        session_timeout_ms=int(config["group.consumer.session.timeout.ms"]),
        heartbeat_interval_ms=int(config["group.consumer.heartbeat.interval.ms"]),
        max_size=int(config["group.consumer.max.size"]),
        assignors=tuple(a.strip() for a in str(config["group.consumer.assignors"]).split(",")),
        assignment_interval_ms=int(config["group.consumer.assignment.interval.ms"]),
        migration_policy=str(config["group.consumer.migration.policy"]).lower(),
    )
    streams_config = StreamsGroupConfig(
        session_timeout_ms=int(config["group.streams.session.timeout.ms"]),
        heartbeat_interval_ms=int(config["group.streams.heartbeat.interval.ms"]),
        max_size=int(config["group.streams.max.size"]),
        num_standby_replicas=int(config["group.streams.num.standby.replicas"]),
        initial_rebalance_delay_ms=int(config["group.streams.initial.rebalance.delay.ms"]),
        assignment_interval_ms=int(config["group.streams.assignment.interval.ms"]),
    )
    share_config = ShareGroupConfig(
        session_timeout_ms=int(config["group.share.session.timeout.ms"]),
        heartbeat_interval_ms=int(config["group.share.heartbeat.interval.ms"]),
        max_size=int(config["group.share.max.size"]),
        delivery_count_limit=int(config["group.share.delivery.count.limit"]),
        record_lock_duration_ms=int(config["group.share.record.lock.duration.ms"]),
        partition_max_record_locks=int(config["group.share.partition.max.record.locks"]),
    )
    # The share coordinator's topic (Kafka's ShareCoordinatorService: compacted, uncompressed).
    share_log = InternalTopicLog(logs, share_state_log.TOPIC,
                                 partitions=int(config["share.coordinator.state.topic.num.partitions"]),
                                 configs={"cleanup.policy": "compact", "compression.type": "uncompressed",
                                          **segment_size_config(int(config["share.coordinator.state.topic.segment.bytes"]))},
                                 base_sequence=0)
    share_state = ShareCoordinator(share_log, snapshot_every=int(
        config["share.coordinator.snapshot.update.records.per.snapshot"]))
    topics = TopicsView(logs)
    return GroupCoordinator(records_log, group_config,
                            offsets_retention_ms=int(config["offsets.retention.minutes"]) * 60_000,
                            offsets_retention_check_interval_ms=int(config["offsets.retention.check.interval.ms"]),
                            consumer=ConsumerGroups(records_log, consumer_config, topics),
                            streams=StreamsGroups(records_log, streams_config, topics),
                            share=ShareGroups(records_log, share_config, topics, share_state), topics=topics)


class TopicsView(Mapping[str, tuple[uuid.UUID, int]]):
    """The broker's topics as the consumer protocol's coordinator sees them: name -> (topic id,
    partitions), read through to the LogManager (no copy per heartbeat)."""

    __slots__ = ("_logs",)

    def __init__(self, logs: LogManager) -> None:
        self._logs = logs

    def __getitem__(self, name: str) -> tuple[uuid.UUID, int]:
        info = self._logs.topics[name]
        return info.topic_id, info.partitions

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._logs.topics))

    def __len__(self) -> int:
        return len(self._logs.topics)
