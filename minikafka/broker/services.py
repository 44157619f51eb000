"""The broker's shared services, handed to every handler (built in app.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from minikafka.broker.purgatory import FetchPurgatory
from minikafka.broker_config import with_dynamic
from minikafka.clock import Clock
from minikafka.config import BrokerConfig
from minikafka.features import Features
from minikafka.coordinator.ports import RecordLog
from minikafka.coordinator.producer_ids import ProducerIdAllocator
from minikafka.coordinator.transaction.coordinator import TransactionCoordinator
from minikafka.faults import NO_FAULTS, FaultInjector
from minikafka.observe.meters import Meters
from minikafka.protocol import versions
from minikafka.protocol.types import TopicPartition
from minikafka.quota.manager import ClientQuotas
from minikafka.storage.config_store import DynamicConfigStore
from minikafka.storage.log_manager import LogManager, TopicError, TopicInfo
from minikafka.storage.quota_store import ClientQuotaStore
from minikafka.storage.scram_store import ScramCredentialStore
from minikafka.topic_config import topic_defaults

if TYPE_CHECKING:  # (the rooms imported only where they are used: see app.py)
    from minikafka.broker.share_partitions import SharePartitionManager
    from minikafka.control.invariants import InvariantMonitor
    from minikafka.coordinator.group.coordinator import GroupCoordinator
    from minikafka.scram.credentials import ScramCredential
    from minikafka.security.acl_manager import AclManager
    from minikafka.storage.partition_log import PartitionLog


@dataclass
class BrokerServices:
    config: BrokerConfig
    logs: LogManager
    clock: Clock
    purgatory: FetchPurgatory
    producer_ids: ProducerIdAllocator
    faults: FaultInjector = NO_FAULTS  # test-only crash points (minikafka/faults.py)
    served: dict[int, versions.VersionRange] = field(default_factory=dict)  # filled by app.py
    # Starts the group coordinator and the share-partition manager: app.py's, called at their first
    # use (the `groups` and `share` properties), so a broker with no group to load does not import
    # them to start serving.
    start_groups: Callable[[], tuple[GroupCoordinator, SharePartitionManager]] | None = None
    txn: TransactionCoordinator | None = None  # the transaction coordinator (set by app.py)
    txn_topic: RecordLog | None = None  # __transaction_state (set by app.py)
    group_configs: DynamicConfigStore | None = None  # GROUP config resources (set by app.py)
    features: Features | None = None  # finalized feature levels, kafka-features.sh (set by app.py)
    broker_configs: DynamicConfigStore | None = None  # dynamic BROKER configs, "" and node id (app.py)
    static_values: Mapping[str, object] = field(default_factory=dict)  # the config before them (app.py)
    quotas: ClientQuotas = field(default_factory=ClientQuotas)  # client quotas (set by app.py)
    quota_store: ClientQuotaStore | None = None  # where they persist (set by app.py)
    scram: dict[tuple[str, int], ScramCredential] = field(default_factory=dict)  # SCRAM credentials (app.py)
    scram_store: ScramCredentialStore | None = None  # where they persist (set by app.py)
    invariants: InvariantMonitor | None = None  # the opt-in invariant monitor (--check-invariants)
    acls: AclManager | None = None  # the authorizer's ACLs, when authorizer.class.name sets one (app.py)
    meters: Meters = field(default_factory=Meters)  # counters the hot paths add to (observe/meters.py)
    # Called after each transaction marker is written: (partition, producer id, committed).
    marker_listeners: list[Callable[[TopicPartition, int, bool], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.logs.on_log_opened = self._watch
        self._groups: GroupCoordinator | None = None
        self._share: SharePartitionManager | None = None

    @property
    def groups(self) -> GroupCoordinator | None:
        """The group coordinator (classic, consumer, streams and share groups), started now if
        this is its first use."""
        if self._groups is None and self.start_groups is not None:
            self._groups, self._share = self.start_groups()
        return self._groups

    @property
    def share(self) -> SharePartitionManager | None:
        """KIP-932 ShareFetch / ShareAcknowledge over the share groups' partitions, started with
        the group coordinator."""
        return None if self.groups is None else self._share

    @property
    def started_groups(self) -> GroupCoordinator | None:
        """The group coordinator if it has started, without starting it (timers, shutdown)."""
        return self._groups

    @property
    def node_id(self) -> int:
        return self.config.node_id

    @property
    def cluster_id(self) -> str:
        return self.logs.cluster_id

    def advertised(self, session: Any) -> tuple[str, int]:
        """The address this node advertises to a client: its listener's (a client on the SASL_SSL
        listener is told the SASL_SSL address, as Kafka answers per listener)."""
        if session is not None:
            listener = session.listener
            return listener.advertised_host, listener.advertised_port
        return self.config.advertised_host, self.config.advertised_port

    def scram_credential(self, user: str, mechanism: int) -> ScramCredential | None:
        """The SCRAM mechanisms' view of the credentials (they change with AlterUserScramCredentials)."""
        return self.scram.get((user, mechanism))

    def dynamic_broker_configs(self) -> tuple[dict[str, str], dict[str, str]]:
        """(this broker's dynamic configs, the cluster-wide defaults), as stored."""
        return stored_broker_configs(self.broker_configs, self.node_id)

    def dynamic_broker_layers(self) -> dict[str, str]:
        """The dynamic broker configs in force: the cluster default, overridden per broker."""
        per_broker, cluster_default = self.dynamic_broker_configs()
        return {**cluster_default, **per_broker}

    def apply_broker_configs(self) -> None:
        """Put the dynamic broker configs in force: the broker's config, and the topic defaults
        every topic without its own override follows."""
        self.config = with_dynamic(self.config, self.static_values or self.config.values,
                                   self.dynamic_broker_layers())
        self.logs.set_topic_defaults(topic_defaults(self.config))

    def save_client_quotas(self, entries: Mapping[tuple[tuple[str, str | None], ...], Mapping[str, float]]) -> None:
        """Persist every client quota before it takes effect (raises OSError when the disk refuses)."""
        if self.quota_store is not None:
            self.quota_store.save(entries)

    def save_scram_credentials(self, entries: Mapping[tuple[str, int], ScramCredential]) -> None:
        """Persist every SCRAM credential, then put them in force (raises OSError when the disk
        refuses, and then nothing changed)."""
        if self.scram_store is not None:
            self.scram_store.save(entries)
        self.scram = dict(entries)

    def auto_create_topic(self, name: str) -> TopicInfo | None:
        """Create a topic on first use (auto.create.topics.enable), as Kafka does for Metadata."""
        if not self.config["auto.create.topics.enable"] or name.startswith("__"):
            return None
        try:
            return self.create_topic(name, int(self.config["num.partitions"]), {})
        except TopicError:
            return self.logs.topics.get(name)

    def create_topic(self, name: str, partitions: int, configs: Mapping[str, str | None]) -> TopicInfo:
        """A topic the broker creates itself (auto-creation, a streams group's internal topics).
        Raises TopicError or OSError."""
        return self.logs.create_topic(name, partitions, configs, now_ms=self.clock.now_ms())

    def _watch(self, plog: PartitionLog) -> None:
        """Wire a partition's appends to the fetch purgatory and the meters: every partition log,
        as LogManager opens it (on_log_opened)."""
        plog.on_append = _on_append(self.purgatory, self.meters, plog.tp)


def _on_append(purgatory: FetchPurgatory, meters: Meters, tp: TopicPartition) -> Callable[[int, int], None]:
    topic = tp.topic

    def appended(records: int, size: int) -> None:
        meters.produced(topic, records, size)
        purgatory.notify(tp)
    return appended


def stored_broker_configs(store: DynamicConfigStore | None, node_id: int) -> tuple[dict[str, str], dict[str, str]]:
    """(per-broker, cluster default) dynamic broker configs kept in `store` ("" is the default)."""
    if store is None:
        return {}, {}
    return store.get(str(node_id)), store.get("")
