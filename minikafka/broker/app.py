"""Broker: the composition root. Builds storage, services, handlers and the server; runs the
background tasks (retention, time-based flush, checkpoints); shuts down cleanly."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import os
import signal
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import structlog

from minikafka.broker import fault_door, send_thread
from minikafka.broker.dispatch import HandlerRegistry
from minikafka.broker.fault_door import FaultDoor
from minikafka.broker.handlers import default_handlers
from minikafka.broker.handlers.write_txn_markers import LocalMarkerWriter
from minikafka.broker.internal_topic import InternalTopicLog
from minikafka.broker.log_cleaner import LogCleaner
from minikafka.broker.producer_id_store import FileProducerIdBlockStore
from minikafka.broker.purgatory import FetchPurgatory
from minikafka.broker.request_memory import RequestMemoryPool
from minikafka.broker.server import KafkaServer
from minikafka.broker.services import BrokerServices, stored_broker_configs
from minikafka.broker.throttling import Throttler, quota_windows
from minikafka.broker.txn_evidence import StoredDataPartitions
from minikafka.broker.usual_produce import UsualProduce
from minikafka.broker_config import ignored_security_configs, with_dynamic
from minikafka.clock import Clock, ControlledClock
from minikafka.config import BrokerConfig, ConfigError
from minikafka.control.rules import FaultRules
from minikafka.coordinator.producer_ids import ProducerIdAllocator
from minikafka.coordinator.transaction.coordinator import TransactionCoordinator
from minikafka.coordinator.transaction.state import OPEN_STATES
from minikafka.coordinator.transaction.txn_log import TOPIC as TXN_TOPIC
from minikafka.faults import FaultInjector
from minikafka.features import SUPPORTED as SUPPORTED_FEATURES
from minikafka.features import TRANSACTION_VERSION, Features
from minikafka.observe.settings import ObserveSettings
from minikafka.protocol.types import TopicPartition
from minikafka.quota.manager import ClientQuotas
from minikafka.security.acl_manager import AclManager, authorizer_enabled
from minikafka.security.acl_store import AclStore
from minikafka.security.authorizer import AuthorizerSettings
from minikafka.security.settings import USED_PREFIXES, listener_securities
from minikafka.storage.config_store import DynamicConfigStore
from minikafka.storage.quota_store import CLIENT_QUOTAS_FILE, ClientQuotaStore
from minikafka.storage.log_manager import LogManager
from minikafka.storage.open_files import RESERVED_FDS, default_capacity, raise_fd_limit
from minikafka.storage.errors import StartupError
from minikafka.storage.scram_store import SCRAM_CREDENTIALS_FILE, ScramCredentialStore
from minikafka.topic_config import parse_topic_config, segment_size_config, topic_defaults

GROUP_CONFIGS_FILE = "minikafka-group-configs.json"  # the GROUP config resources' overrides
FEATURES_FILE = "minikafka-features.json"  # finalized feature levels set by UpdateFeatures
BROKER_CONFIGS_FILE = "minikafka-broker-configs.json"  # dynamic BROKER configs ("" and the node id)

if TYPE_CHECKING:  # the control endpoint, the invariant monitor and JWKS are imported when asked for
    from minikafka.broker.control_server import ControlServer
    from minikafka.broker.share_partitions import SharePartitionManager
    from minikafka.control.invariants import Violation
    from minikafka.coordinator.group.coordinator import GroupCoordinator
    from minikafka.security.jwks import JwksSource

log = structlog.get_logger("minikafka.broker")
# The group coordinator's topics. A data dir holding either starts the coordinator with the broker
# (it has groups to load); one without starts it at its first use (Broker._start_groups). Named
# here, not imported: importing offsets_log and state_log is part of what waiting saves (a unit
# test holds the names equal to theirs).
OFFSETS_TOPIC = "__consumer_offsets"
SHARE_STATE_TOPIC = "__share_group_state"
# How often the internal topics are checked for a rolled segment to compact (cheap: a length test).
COMPACTION_CHECK_MS = 1000
SHARE_LOCK_CHECK_MS = 100   # how late an expired acquisition lock may be noticed
INVARIANT_CHECK_MS = 1000  # the invariant monitor's look for transactions that ended without a marker
ROLL_CHECKPOINT_MS = 1000  # how soon a rolled segment's finished flush reaches the recovery-point checkpoint


def _log_violation(v: Violation) -> None:
    log.warning("invariant_violated", **v.describe())


FEATURES_RESOURCE, EPOCH_KEY = "finalized", "finalized.features.epoch"


def load_features(config: BrokerConfig, store: DynamicConfigStore) -> Features:
    """The levels an UpdateFeatures stored win over the broker properties of the same names, which
    only give the levels of a data dir that never had one (Kafka's `kafka-storage format --feature`)."""
    stored = store.get(FEATURES_RESOURCE)
    levels = {name: int(stored.get(name, config[name])) for name in SUPPORTED_FEATURES}

    def save(new: Mapping[str, int], epoch: int) -> None:
        store.set(FEATURES_RESOURCE, {**{name: str(level) for name, level in new.items()}, EPOCH_KEY: str(epoch)})

    return Features(levels, int(stored.get(EPOCH_KEY, 1)), save=save)


class Broker:
    def __init__(self, config: BrokerConfig, clock: Clock | None = None, *,
                 control: tuple[str, int] | None = None, check_invariants: bool = False,
                 observe: ObserveSettings | None = None) -> None:
        """`control`: (host, port) of the control endpoint (broker/control_server.py), off when None;
        `check_invariants`: run the invariant monitor (control/invariants.py); `observe`: the
        metrics and console endpoints (observe/server.py), off when None."""
        if observe is not None:
            try:
                observe.check()
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        self.observe_settings = observe
        # Dynamic broker configs (set with IncrementalAlterConfigs) override server.properties from
        # the start, as in Kafka; everything below is built with them in force.
        broker_configs = DynamicConfigStore(config.data_dir / BROKER_CONFIGS_FILE)
        static_values = dict(config.values)
        per_broker, cluster_default = stored_broker_configs(broker_configs, config.node_id)
        config = with_dynamic(config, static_values, {**cluster_default, **per_broker})
        self.config = config
        # The listeners' TLS and SASL settings are checked before anything on disk is touched.
        try:
            listeners = listener_securities(config["listeners"], config["advertised.listeners"], config.ignored,
                                            lambda user, mechanism: self.services.scram_credential(user, mechanism),
                                            lambda: self.clock.now_ms())
            with_authorizer = authorizer_enabled(config.ignored.get("authorizer.class.name"))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        for sec in listeners:
            if sec.jwks is not None and not sec.jwks.source.refresh():  # read once before serving
                log.warning("jwks_unavailable", listener=sec.listener.name, url=sec.jwks.source.url,
                            reason=sec.jwks.source.last_error, why="OAUTHBEARER tokens are refused until it is read")
        self.clock = clock or ControlledClock()  # the system's, until a test pauses or advances it
        # File descriptors: the soft limit goes up to the hard one; half of what is left after a
        # reserve serves segment files (opened on demand), the rest bounds the connections.
        fd_limit, _ = raise_fd_limit()
        open_files = default_capacity(fd_limit)
        socket_fds = max(1, fd_limit - open_files - RESERVED_FDS)
        if send_thread.available():  # the send thread holds a duplicate of each connection's socket
            socket_fds = max(1, socket_fds // 2)
        self.logs = LogManager(config.data_dir, node_id=config.node_id,
                               topic_defaults=topic_defaults(config),
                               topic_config_parser=parse_topic_config,
                               cluster_id=config["cluster.id"] or None, open_files_capacity=open_files,
                               recovery_threads=config["num.recovery.threads.per.data.dir"])
        self.purgatory = FetchPurgatory()
        # Fault rules (issue 20): set through the control endpoint, or MINIKAFKA_CRASH_AT at start.
        self.fault_rules = FaultRules(on_fire=fault_door.logged)
        self.faults = FaultInjector(os.environ, self.fault_rules)
        self.services = BrokerServices(config=config, logs=self.logs, clock=self.clock,
                                       purgatory=self.purgatory,
                                       producer_ids=ProducerIdAllocator(FileProducerIdBlockStore(config.data_dir)),
                                       faults=self.faults)
        self.services.start_groups = self._start_groups
        self._group_deadlines_changed = asyncio.Event()  # wakes the group timer task
        self.services.group_configs = DynamicConfigStore(config.data_dir / GROUP_CONFIGS_FILE)
        self.services.features = load_features(config, DynamicConfigStore(config.data_dir / FEATURES_FILE))
        self.services.broker_configs = broker_configs
        self.services.static_values = static_values
        self.services.quota_store = ClientQuotaStore(config.data_dir / CLIENT_QUOTAS_FILE)
        self.services.quotas = ClientQuotas(quota_windows(config), self.services.quota_store.entries)
        self.services.scram_store = ScramCredentialStore(config.data_dir / SCRAM_CREDENTIALS_FILE)
        if self.services.scram_store.entries:  # else the SCRAM room is imported by its first use
            from minikafka.scram.credentials import ScramCredential
            self.services.scram = {k: ScramCredential(*c) for k, c in self.services.scram_store.entries.items()}
        self.txn_topic = InternalTopicLog(
            self.logs, TXN_TOPIC, partitions=int(config["transaction.state.log.num.partitions"]),
            configs={"cleanup.policy": "compact", "compression.type": "uncompressed",
                     **segment_size_config(int(config["transaction.state.log.segment.bytes"]))},
            before_append=self.faults.check_txn_log_append)
        self.txn = TransactionCoordinator(
            self.txn_topic, LocalMarkerWriter(self.services), new_producer_id=self.services.producer_ids.generate,
            max_timeout_ms=int(config["transaction.max.timeout.ms"]),
            expiration_ms=int(config["transactional.id.expiration.ms"]), crash_point=self.faults.reach,
            transaction_version=self.services.features.level(TRANSACTION_VERSION))
        self.services.features.subscribe(lambda levels: self.txn.set_transaction_version(levels[TRANSACTION_VERSION]))
        self.services.txn = self.txn
        self.services.txn_topic = self.txn_topic
        self.services.marker_listeners.append(self._offsets_marker_written)
        meters = self.services.meters
        self.services.marker_listeners.append(lambda _tp, _pid, committed: meters.marker_written(committed))
        self.txn.transition_listeners.append(meters.transaction_transition)
        if check_invariants:
            from minikafka.control.invariants import InvariantMonitor
            monitor = InvariantMonitor(on_violation=_log_violation)
            self.services.invariants = monitor
            self.services.marker_listeners.append(
                lambda tp, pid, commit: monitor.marker(tp, pid, commit, self.logs.get(tp).log_end_offset - 1))
        if with_authorizer:
            settings = AuthorizerSettings.parse(config.ignored.get("super.users"),
                                                config.ignored.get("allow.everyone.if.no.acl.found"))
            try:
                self.services.acls = AclManager(AclStore(config.data_dir), settings)
            except (ValueError, KeyError) as exc:  # a damaged ACL file: refuse to guess who may do what
                raise StartupError(f"the ACL file in {config.data_dir} cannot be read ({exc}); restore it "
                                   "or remove it and create the ACLs again") from None
        self.registry = HandlerRegistry(default_handlers(self.services))
        self.services.served = self.registry.served
        self.server = KafkaServer(self.registry, listeners=listeners,
                                  max_frame_size=int(config["socket.request.max.bytes"]),
                                  idle_ms=int(config["connections.max.idle.ms"]),
                                  now_ms=self.clock.now_ms, monotonic_ms=self.clock.monotonic_ms,
                                  memory=RequestMemoryPool(config.queued_max_request_bytes),
                                  max_connections=min(int(config["max.connections"]), socket_fds),
                                  max_connections_per_ip=int(config["max.connections.per.ip"]),
                                  throttler=Throttler(self.services.quotas, self.clock.now_ms),
                                  faults=FaultDoor(self.fault_rules, self._topic_name), meters=meters,
                                  # An authorizer and the invariant monitor see every request.
                                  usual_produce=(UsualProduce(self.services) if self.services.acls is None
                                                and self.services.invariants is None else None))
        self.control: ControlServer | None = None  # when `control` asks for one
        if control is not None:
            from minikafka.broker.control_server import ControlServer
            self.control = ControlServer(
                self.fault_rules, host=control[0], port=control[1],
                clock=self.clock if isinstance(self.clock, ControlledClock) else None, run_timers=self.run_timers,
                invariants=self.services.invariants)
        self.fd_budget = {"fd_limit": fd_limit, "open_files": open_files, "connections": socket_fds}
        self.cleaner = LogCleaner(self.logs, lambda: self.services.config, self.clock.now_ms,
                                  frozenset({OFFSETS_TOPIC, TXN_TOPIC}), crash_point=self.faults.reach)
        self.observe: Any = None  # the ObserveServer, once started (observe/server.py)
        self._tasks: list[asyncio.Task[None]] = []
        self._timers: list[tuple[Callable[[], Awaitable[None] | None], asyncio.Lock]] = []
        self._stopping = asyncio.Event()
        self._shutting_down = False  # shutdown() has begun: a coordinator started now starts closed

    async def start(self) -> None:
        self.logs.startup(self.clock.now_ms())
        self.cleaner.load()
        if OFFSETS_TOPIC in self.logs.topics or SHARE_STATE_TOPIC in self.logs.topics:
            self.services.groups  # noqa: B018 - starts the coordinator: it has groups to load
        self.txn_topic.complete_rebuilt(self.clock.now_ms())
        self.txn.load()
        # Internal partitions that lost unreadable records: say which transactional ids live there.
        damaged = self.logs.damaged
        self.txn.report_damage(tp.partition for tp in damaged if tp.topic == TXN_TOPIC)
        await self.txn.repair_damaged([tp.partition for tp in damaged if tp.topic == TXN_TOPIC],
                                      StoredDataPartitions(self.logs), self.clock.now_ms)
        self.txn.resume_pending_markers(self.clock.now_ms)
        self._tasks.append(asyncio.create_task(self._group_timers()))
        if len(self.server.listeners) == 1:
            await self.server.start()  # a busy Kafka port is said by __main__, which knows --port
        else:  # the address says which one
            await _start_endpoint(self.server.start(), "a listener of `listeners`")
        if self.control is not None:
            await _start_endpoint(self.control.start(), "the control endpoint (--control-port)")
        if self.observe_settings is not None and self.observe_settings.enabled:
            await _start_endpoint(self._start_observe(self.observe_settings),
                                  "the metrics or console endpoint (--metrics-port, --console-port)")
        if self.config.advertised_port == 0:
            cfg = dataclasses.replace(self.config, advertised_port=self.server.port)
            self.config = cfg
            self.services.config = cfg
        c = self.config
        self._every(int(c["log.retention.check.interval.ms"]), self._retention)
        self._every(int(c["producer.id.expiration.check.interval.ms"]), self._expire_producers)
        self._every(int(c["transaction.abort.timed.out.transaction.cleanup.interval.ms"]), self._abort_timed_out)
        self._every(int(c["transaction.remove.expired.transaction.cleanup.interval.ms"]), self._expire_txn_ids)
        self._every(COMPACTION_CHECK_MS, self._compact_internal_topics)
        for sec in self.server.listeners:
            if sec.jwks is not None:
                self._every(sec.jwks.refresh_ms, self._jwks_refresher(sec.listener.name, sec.jwks.source))
        if self.services.invariants is not None:
            self._every(INVARIANT_CHECK_MS, self._check_open_transactions)
        if c["log.cleaner.enable"]:
            self._tasks.append(asyncio.create_task(self.cleaner.run()))
        self._every(int(c["log.flush.offset.checkpoint.interval.ms"]), self._checkpoint)
        self._every(ROLL_CHECKPOINT_MS, self._checkpoint_flushed_rolls)
        if c["log.flush.interval.ms"] is not None or c["log.flush.scheduler.interval.ms"] < 2**62:
            self._every(min(int(c["log.flush.scheduler.interval.ms"]), 1000), self._flush)
        log.info("broker_started", node_id=c.node_id, port=self.server.port, data_dir=str(c.data_dir),
                 cluster_id=self.logs.cluster_id, **self.fd_budget)
        ignored = sorted(n for n in c.ignored if not n.startswith(USED_PREFIXES))
        if ignored:
            log.info("configs_ignored", names=ignored, why="Kafka configs with no meaning on one node")
        insecure = ignored_security_configs(c)
        if insecure:
            log.warning("security_configs_ignored", names=insecure,
                        why="minikafka does not implement them (its own principal builder and authorizer only)")

    def _every(self, interval_ms: int, fn: Callable[[], Awaitable[None] | None]) -> None:
        lock = asyncio.Lock()  # one run of fn at a time: its own loop's, or one run_timers asked for
        self._timers.append((fn, lock))

        async def loop() -> None:
            disk_failing = False
            while True:
                await asyncio.sleep(interval_ms / 1000)
                try:
                    async with lock:
                        result = fn()
                        if result is not None:
                            await result
                except OSError as exc:
                    # A full or failing disk: one warning until the task succeeds again, not a
                    # traceback every interval (checkpoints, flushes, compaction retry by themselves).
                    if not disk_failing:
                        log.warning("background_task_storage_error", task=fn.__name__, reason=str(exc))
                    disk_failing = True
                    continue
                except Exception:
                    log.exception("background_task_failed", task=fn.__name__)
                    continue
                if disk_failing:
                    log.info("background_task_recovered", task=fn.__name__)
                    disk_failing = False
        self._tasks.append(asyncio.create_task(loop()))

    async def run_timers(self) -> None:
        """Every timed job once, now, in order, and the groups' deadlines that fell due: what a
        jump of the clock (virtual time, ControlledClock.advance) makes due happens before this
        returns, so a test that advanced the clock sees its outcome (a timed-out transaction
        aborted and fenced, an id expired, a member gone, a segment deleted) deterministically."""
        for fn, lock in self._timers:
            async with lock:
                result = fn()
                if result is not None:
                    await result
        groups = self.services.started_groups
        if groups is not None:
            await groups.expire(self.clock.now_ms())
            self._group_deadlines_changed.set()  # the group timer task sleeps until a new deadline

    def _start_groups(self) -> tuple[GroupCoordinator, SharePartitionManager]:
        """Build the group coordinator and the share-partition manager, and load what their
        topics hold: with the broker when the data dir has groups, else at the first request that
        needs them (BrokerServices.groups)."""
        # Imported here: the coordinator and its four rooms (classic, consumer, streams, share
        # groups) are ~60 ms of imports, a third of a start, and an empty data dir has no group.
        from minikafka.broker.group_log import build_group_coordinator
        from minikafka.broker.share_partitions import SharePartitionManager

        now_ms = self.clock.now_ms()
        config = self.config  # the config the broker started with, as a start with the broker uses
        groups = build_group_coordinator(config, self.logs)
        # A group's consumer.* (streams.*, share.*) configs override the broker's group.* defaults.
        overrides = self.services.group_configs
        assert overrides is not None
        for room in (groups.consumer, groups.streams, groups.share):
            room.group_overrides = overrides.get
        # KIP-932: ShareFetch / ShareAcknowledge over the share groups' partitions.
        share = SharePartitionManager(self.services, groups.share,
                                      max_sessions=int(config["group.share.max.share.sessions"]))
        groups.complete_offsets_topic(now_ms)
        groups.share.share_state.complete_topic(now_ms)
        groups.load(now_ms)
        groups.share.share_state.load()
        # Partitions that lost unreadable records at start-up: say which groups lived there.
        groups.report_damage(tp.partition for tp in self.logs.damaged if tp.topic == OFFSETS_TOPIC)
        if self._shutting_down:
            # A request that shutdown() let finish asked first: it is answered NOT_COORDINATOR, as
            # by a coordinator shutdown() closed, and no timer outlives the broker.
            groups.shutdown()
            return groups, share
        groups.on_deadlines_changed = self._group_deadlines_changed.set
        self._group_deadlines_changed.set()
        self._every(SHARE_LOCK_CHECK_MS, share.expire_locks)
        self.server.closed_listeners.append(share.connection_closed)
        return groups, share

    async def _group_timers(self) -> None:
        """Drive the group coordinator's deadlines (sessions, join/sync phases, offset expiry),
        once it has started."""
        wake = self._group_deadlines_changed
        while True:
            groups = self.services.started_groups
            deadline = None if groups is None else groups.next_deadline()
            now = self.clock.now_ms()
            if groups is not None and deadline is not None and deadline <= now:
                try:
                    await groups.expire(now)
                except Exception:
                    log.exception("background_task_failed", task="group_timers")
                    await asyncio.sleep(0.1)
                after = groups.next_deadline()
                if after is not None and after <= now:
                    await asyncio.sleep(0.01)  # never spin on a deadline expire() did not clear
                continue
            wake.clear()
            timeout = None if deadline is None else (deadline - now) / 1000
            try:
                await asyncio.wait_for(wake.wait(), timeout)
            except TimeoutError:
                pass

    async def _start_observe(self, settings: ObserveSettings) -> None:
        # Imported only when asked for: aiohttp, Jinja and prometheus_client cost start-up time.
        from minikafka.broker.observation import LiveView
        from minikafka.observe.server import ObserveServer

        view = LiveView(self.services, self.server)
        self.observe = ObserveServer(settings, view, view)
        await self.observe.start()

    def _check_open_transactions(self) -> None:
        """The invariant monitor's marker check: a transaction still open on a partition must be
        open at the coordinator (its producer id, or the one it moved from)."""
        open_ids = {pid for m in self.txn.all() if m.state in OPEN_STATES
                    for pid in (m.producer_id, m.previous_producer_id)}
        assert self.services.invariants is not None
        self.services.invariants.check_open(open_ids.__contains__)

    def _offsets_marker_written(self, tp: TopicPartition, producer_id: int, committed: bool) -> None:
        # A marker on __consumer_offsets makes the producer's pending offsets visible or drops them.
        if tp.topic == OFFSETS_TOPIC and (groups := self.services.groups) is not None:
            groups.complete_transaction(tp.partition, producer_id, committed)

    def _jwks_refresher(self, listener: str, source: JwksSource) -> Callable[[], Awaitable[None]]:
        async def refresh() -> None:  # a blocking fetch, on a thread
            if not await asyncio.to_thread(source.refresh):
                log.warning("jwks_refresh_failed", listener=listener, url=source.url, reason=source.last_error)
        return refresh

    async def _abort_timed_out(self) -> None:
        await self.txn.abort_timed_out(self.clock.now_ms)

    async def _expire_txn_ids(self) -> None:
        await self.txn.expire_transactional_ids(self.clock.now_ms)

    async def _compact_internal_topics(self) -> None:
        groups = self.services.started_groups
        if groups is not None:
            await groups.compact(self.clock.now_ms())
            await groups.share.share_state.compact(self.clock.now_ms())
        await self.txn.compact(self.clock.now_ms)

    def _retention(self) -> None:
        self.logs.delete_retained(self.clock.now_ms())

    def _expire_producers(self) -> None:
        self.logs.expire_producers(self.clock.now_ms(), int(self.config["producer.id.expiration.ms"]))

    def _checkpoint(self) -> None:
        self.logs.checkpoint()

    def _checkpoint_flushed_rolls(self) -> None:
        self.logs.checkpoint_flushed_rolls()

    def _topic_name(self, topic_id: uuid.UUID) -> str | None:
        info = self.logs.topic_by_id(topic_id)
        return None if info is None else info.name

    def _flush(self) -> None:
        self.logs.flush_by_time(self.clock.now_ms())

    def request_stop(self) -> None:
        self._stopping.set()

    async def stop_requested(self) -> None:
        """Return once request_stop() was called (by a signal handler, or the embedded broker's owner)."""
        await self._stopping.wait()

    async def run(self, after_start: Callable[[], object] | None = None) -> None:
        """Serve until SIGTERM/SIGINT, then shut down cleanly. `after_start` runs once the broker
        answers: the process's own set-up that the first answers need not wait for."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        await self.start()
        if after_start is not None:
            after_start()
        await self.stop_requested()
        await self.shutdown()

    async def shutdown(self) -> None:
        log.info("broker_stopping")
        self._shutting_down = True
        self.purgatory.close()
        if (groups := self.services.started_groups) is not None:
            groups.shutdown()
        if self.control is not None:
            await self.control.stop()
        if self.observe is not None:
            await self.observe.stop()
        await self.server.stop()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.txn.close()
        self.logs.shutdown()
        log.info("broker_stopped")


async def _start_endpoint(start: Awaitable[None], what: str) -> None:
    """Start a side endpoint; a busy port names that endpoint and its address (asyncio's error
    text carries it), where __main__ would otherwise blame the Kafka port."""
    try:
        await start
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        raise StartupError(f"cannot start {what}: {exc.strerror}") from None
