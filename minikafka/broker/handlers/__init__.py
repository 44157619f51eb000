"""One module per Kafka API; default_handlers() is the explicit list the registry is built from."""

from __future__ import annotations

from minikafka.broker.dispatch import Handler
from minikafka.broker.handlers.api_versions import ApiVersionsHandler
from minikafka.broker.handlers.create_partitions import CreatePartitionsHandler
from minikafka.broker.handlers.create_topics import CreateTopicsHandler
from minikafka.broker.handlers.delete_topics import DeleteTopicsHandler
from minikafka.broker.handlers.describe_cluster import DescribeClusterHandler
from minikafka.broker.handlers.describe_configs import DescribeConfigsHandler
from minikafka.broker.handlers.fetch import FetchHandler
from minikafka.broker.handlers.init_producer_id import InitProducerIdHandler
from minikafka.broker.handlers.list_offsets import ListOffsetsHandler
from minikafka.broker.handlers.metadata import MetadataHandler
from minikafka.broker.handlers.offset_for_leader_epoch import OffsetForLeaderEpochHandler
from minikafka.broker.handlers.produce import ProduceHandler
from minikafka.broker.services import BrokerServices


def default_handlers(svc: BrokerServices) -> list[Handler]:
    return [
        ProduceHandler(svc),
        FetchHandler(svc),
        ListOffsetsHandler(svc),
        MetadataHandler(svc),
        ApiVersionsHandler(svc),
        CreateTopicsHandler(svc),
        DeleteTopicsHandler(svc),
        OffsetForLeaderEpochHandler(svc),
        DescribeConfigsHandler(svc),
        CreatePartitionsHandler(svc),
        DescribeClusterHandler(svc),
        InitProducerIdHandler(svc),
    ]
