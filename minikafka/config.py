"""Broker configuration under Apache Kafka's property names and defaults.

Properties come from a Kafka-style server.properties file and `--override key=value`, as with
kafka-server-start. A property minikafka implements is parsed and validated; a property that
belongs to Apache Kafka but has no meaning on a single Python node (threads, replication, KRaft
quorum settings) is accepted and ignored; any other key is a startup error.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

LONG_MAX = 2**63 - 1


class ConfigError(ValueError):
    """An unknown or invalid property: the broker refuses to start."""


def _bool(v: str) -> bool:
    low = v.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    raise ValueError(f"expected true or false, got {v!r}")


def _int(v: str) -> int:
    return int(v.strip())


def _str(v: str) -> str:
    return v.strip()


def _float(v: str) -> float:
    return float(v.strip())


def _opt_int(v: str) -> int | None:
    v = v.strip()
    return None if v in ("", "null") else int(v)


def _listeners(v: str) -> str:
    v = v.strip()
    for part in filter(None, (p.strip() for p in v.split(","))):
        if "://" not in part:
            raise ValueError(f"listener {part!r} is not NAME://host:port")
        _parse_listener(part)
    return v


def _parse_listener(spec: str) -> tuple[str, str, int]:
    name, rest = spec.split("://", 1)
    host, _, port = rest.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return name, host, int(port)


@dataclasses.dataclass(frozen=True)
class Prop:
    name: str
    parse: Callable[[str], Any]
    default: Any
    check: Callable[[Any], bool] = lambda _v: True
    doc: str = ""


def _ge(n: int) -> Callable[[Any], bool]:
    return lambda v: v is None or v >= n


# Kafka names and defaults (server-common ServerLogConfigs, ServerConfigs, SocketServerConfigs,
# GroupCoordinatorConfig, TransactionStateManagerConfigs, ...).
PROPS: tuple[Prop, ...] = (
    Prop("node.id", _int, 1, _ge(0)),
    Prop("broker.id", _int, -1),
    Prop("listeners", _listeners, "PLAINTEXT://127.0.0.1:9092"),
    Prop("advertised.listeners", _listeners, ""),
    Prop("log.dirs", _str, ""),
    Prop("log.dir", _str, "/tmp/kafka-logs"),
    Prop("num.partitions", _int, 1, _ge(1)),
    Prop("default.replication.factor", _int, 1, _ge(1)),
    Prop("auto.create.topics.enable", _bool, True),
    Prop("delete.topic.enable", _bool, True),
    Prop("log.segment.bytes", _int, 1073741824, _ge(14)),
    Prop("log.roll.ms", _opt_int, None, _ge(1)),
    Prop("log.roll.hours", _int, 168, _ge(1)),
    Prop("log.retention.ms", _opt_int, None),
    Prop("log.retention.minutes", _opt_int, None),
    Prop("log.retention.hours", _int, 168),
    Prop("log.retention.bytes", _int, -1),
    Prop("log.retention.check.interval.ms", _int, 300000, _ge(1)),
    Prop("log.flush.interval.messages", _int, LONG_MAX, _ge(1)),
    Prop("log.flush.interval.ms", _opt_int, None, _ge(0)),
    Prop("log.flush.scheduler.interval.ms", _int, LONG_MAX, _ge(0)),
    Prop("log.flush.offset.checkpoint.interval.ms", _int, 60000, _ge(0)),
    Prop("num.recovery.threads.per.data.dir", _int, 2, _ge(1)),
    Prop("log.flush.start.offset.checkpoint.interval.ms", _int, 60000, _ge(0)),
    Prop("log.index.interval.bytes", _int, 4096, _ge(0)),
    Prop("log.index.size.max.bytes", _int, 10485760, _ge(4)),
    Prop("log.segment.delete.delay.ms", _int, 60000, _ge(0)),
    Prop("log.cleanup.policy", _str, "delete"),
    Prop("log.message.timestamp.type", _str, "CreateTime", lambda v: v in ("CreateTime", "LogAppendTime")),
    Prop("log.message.timestamp.before.max.ms", _int, LONG_MAX, _ge(0)),
    Prop("log.message.timestamp.after.max.ms", _int, 3600000, _ge(0)),
    Prop("message.max.bytes", _int, 1048588, _ge(0)),
    Prop("socket.request.max.bytes", _int, 104857600, _ge(1)),
    # Incremental fetch sessions (KIP-227): how many the broker keeps; 0 turns them off.
    Prop("max.incremental.fetch.session.cache.slots", _int, 1000, _ge(0)),
    Prop("connections.max.idle.ms", _int, 600000),
    # Bytes of requests being read at once (Kafka's memory pool); -1 here means twice
    # socket.request.max.bytes (Kafka: unbounded), see BrokerConfig.queued_max_request_bytes.
    Prop("queued.max.request.bytes", _int, -1, lambda v: v == -1 or v > 0),
    Prop("max.connections", _int, 2147483647, _ge(0)),
    Prop("max.connections.per.ip", _int, 2147483647, _ge(0)),
    Prop("request.timeout.ms", _int, 30000),
    Prop("compression.type", _str, "producer"),
    Prop("offsets.topic.num.partitions", _int, 50, _ge(1)),
    Prop("offsets.topic.replication.factor", _int, 3, _ge(1)),
    Prop("offsets.topic.segment.bytes", _int, 104857600, _ge(1)),
    Prop("offsets.retention.minutes", _int, 10080, _ge(1)),
    Prop("offsets.retention.check.interval.ms", _int, 600000, _ge(1)),
    Prop("group.initial.rebalance.delay.ms", _int, 3000, _ge(0)),
    Prop("group.min.session.timeout.ms", _int, 6000),
    Prop("group.max.session.timeout.ms", _int, 1800000),
    Prop("group.max.size", _int, 2147483647, _ge(1)),
    # KIP-848 consumer groups (Kafka's GroupCoordinatorConfig): group.version is the finalized level
    # of the feature (1, Kafka 4.x's default, turns the consumer protocol on; 0 answers its APIs
    # UNSUPPORTED_VERSION), advertised in ApiVersions like transaction.version.
    Prop("group.version", _int, 1, lambda v: 0 <= v <= 1),
    Prop("group.consumer.session.timeout.ms", _int, 45000, _ge(1)),
    Prop("group.consumer.min.session.timeout.ms", _int, 45000, _ge(1)),
    Prop("group.consumer.max.session.timeout.ms", _int, 60000, _ge(1)),
    Prop("group.consumer.heartbeat.interval.ms", _int, 5000, _ge(1)),
    Prop("group.consumer.min.heartbeat.interval.ms", _int, 5000, _ge(1)),
    Prop("group.consumer.max.heartbeat.interval.ms", _int, 15000, _ge(1)),
    Prop("group.consumer.max.size", _int, 2147483647, _ge(1)),
    Prop("group.consumer.assignors", _str, "uniform,range",
         lambda v: bool(v) and all(a.strip() in ("uniform", "range") for a in v.split(","))
         and len({a.strip() for a in v.split(",")}) == len(v.split(","))),
    Prop("group.consumer.assignment.interval.ms", _int, 1000, _ge(0)),
    # Online migration between the protocols (KIP-848): bidirectional, upgrade, downgrade, disabled.
    Prop("group.consumer.migration.policy", _str, "bidirectional",
         lambda v: v.lower() in ("bidirectional", "upgrade", "downgrade", "disabled")),
    # KIP-1071 streams groups: streams.version is the finalized level of the feature (1, Kafka
    # 4.3's default, turns the streams protocol on; 0 answers its APIs UNSUPPORTED_VERSION).
    Prop("streams.version", _int, 1, lambda v: 0 <= v <= 1),
    Prop("group.streams.session.timeout.ms", _int, 45000, _ge(1)),
    Prop("group.streams.min.session.timeout.ms", _int, 45000, _ge(1)),
    Prop("group.streams.max.session.timeout.ms", _int, 60000, _ge(1)),
    Prop("group.streams.heartbeat.interval.ms", _int, 5000, _ge(1)),
    Prop("group.streams.min.heartbeat.interval.ms", _int, 5000, _ge(1)),
    Prop("group.streams.max.heartbeat.interval.ms", _int, 15000, _ge(1)),
    Prop("group.streams.max.size", _int, 2147483647, _ge(1)),
    Prop("group.streams.num.standby.replicas", _int, 0, _ge(0)),
    Prop("group.streams.max.standby.replicas", _int, 2, _ge(0)),
    Prop("group.streams.initial.rebalance.delay.ms", _int, 3000, _ge(0)),
    Prop("group.streams.assignment.interval.ms", _int, 1000, _ge(0)),
    Prop("group.streams.min.assignment.interval.ms", _int, 0, _ge(0)),
    Prop("group.streams.max.assignment.interval.ms", _int, 15000, _ge(0)),
    # KIP-932 share groups: share.version is the finalized level of the feature (1, Kafka 4.3's
    # default, turns share groups on; 0 answers their APIs UNSUPPORTED_VERSION).
    Prop("share.version", _int, 1, lambda v: 0 <= v <= 1),
    Prop("group.share.session.timeout.ms", _int, 45000, _ge(1)),
    Prop("group.share.heartbeat.interval.ms", _int, 5000, _ge(1)),
    Prop("group.share.max.size", _int, 200, lambda v: 1 <= v <= 1000),
    Prop("group.share.delivery.count.limit", _int, 5, lambda v: 2 <= v <= 10),
    Prop("group.share.record.lock.duration.ms", _int, 30000, lambda v: 1000 <= v <= 3600000),
    Prop("group.share.partition.max.record.locks", _int, 2000, lambda v: 100 <= v <= 10000),
    Prop("group.share.max.share.sessions", _int, 2000, _ge(1)),
    Prop("share.coordinator.state.topic.num.partitions", _int, 50, _ge(1)),
    Prop("share.coordinator.state.topic.segment.bytes", _int, 104857600, _ge(1)),
    Prop("share.coordinator.snapshot.update.records.per.snapshot", _int, 500, lambda v: 0 <= v <= 500),
    Prop("transaction.state.log.num.partitions", _int, 50, _ge(1)),
    Prop("transaction.state.log.replication.factor", _int, 3, _ge(1)),
    Prop("transaction.state.log.min.isr", _int, 2, _ge(1)),
    Prop("transaction.state.log.segment.bytes", _int, 104857600, _ge(1)),
    Prop("transaction.max.timeout.ms", _int, 900000, _ge(1)),
    Prop("transaction.abort.timed.out.transaction.cleanup.interval.ms", _int, 10000, _ge(1)),
    Prop("transaction.remove.expired.transaction.cleanup.interval.ms", _int, 3600000, _ge(1)),
    Prop("transactional.id.expiration.ms", _int, 604800000, _ge(1)),
    Prop("transaction.partition.verification.enable", _bool, True),
    # The finalized level of Kafka's transaction.version feature, which Kafka sets with
    # `kafka-storage format --feature transaction.version=N` or kafka-features.sh: 2 (Kafka 4.x's
    # default) lets clients use transactions v2 (KIP-890 part 2), 1 writes __transaction_state in
    # its flexible schema only, 0 is the 3.x behaviour. Advertised in ApiVersions.
    Prop("transaction.version", _int, 2, lambda v: 0 <= v <= 2),
    Prop("producer.id.expiration.ms", _int, 86400000, _ge(1)),
    Prop("producer.id.expiration.check.interval.ms", _int, 600000, _ge(1)),
    Prop("min.insync.replicas", _int, 1, _ge(1)),
    Prop("unclean.leader.election.enable", _bool, False),
    # Defaults of topic configs that minikafka stores and describes (compaction, compression levels,
    # tiered storage); see topic_config.py for which of them take effect on one node.
    Prop("compression.gzip.level", _int, -1),
    Prop("compression.lz4.level", _int, 9),
    Prop("compression.zstd.level", _int, 3),
    Prop("log.cleaner.delete.retention.ms", _int, 86400000, _ge(0)),
    Prop("log.cleaner.min.compaction.lag.ms", _int, 0, _ge(0)),
    Prop("log.cleaner.max.compaction.lag.ms", _int, LONG_MAX, _ge(1)),
    Prop("log.cleaner.min.cleanable.ratio", _float, 0.5, lambda v: 0 <= v <= 1),
    # The log cleaner (minikafka/storage/cleaner, one background task on the event loop).
    Prop("log.cleaner.enable", _bool, True),
    Prop("log.cleaner.threads", _int, 1, _ge(0)),  # accepted; one task cleans one log at a time
    Prop("log.cleaner.backoff.ms", _int, 15000, _ge(0)),
    Prop("log.cleaner.dedupe.buffer.size", _int, 134217728),
    Prop("log.cleaner.io.buffer.size", _int, 524288, _ge(0)),
    Prop("log.cleaner.io.buffer.load.factor", _float, 0.9),
    Prop("log.cleaner.io.max.bytes.per.second", _float, 1.7976931348623157e308),
    Prop("log.local.retention.ms", _int, -2, _ge(-2)),
    Prop("log.local.retention.bytes", _int, -2, _ge(-2)),
    Prop("log.preallocate", _bool, False),
    Prop("cluster.id", _str, ""),
    # Client quotas (minikafka/quota): the windows their rates are measured over.
    Prop("quota.window.num", _int, 11, _ge(1)),
    Prop("quota.window.size.seconds", _int, 1, _ge(1)),
    Prop("controller.quota.window.num", _int, 11, _ge(1)),
    Prop("controller.quota.window.size.seconds", _int, 1, _ge(1)),
)

def _kafka_broker_configs() -> dict[str, tuple[int, str | None, bool, bool]]:
    """Kafka 4.3.1's broker configs: name -> (ConfigType code, default, read_only, sensitive),
    recorded from a real broker by bench/kafka/record-broker-configs.py."""
    doc = json.loads(Path(__file__).with_name("kafka_broker_configs.json").read_text(encoding="utf-8"))
    return {name: (int(t), default, bool(ro), bool(sensitive)) for name, (t, default, ro, sensitive) in
            doc["configs"].items()}


KAFKA_BROKER_CONFIGS = _kafka_broker_configs()

# Apache Kafka properties that have no meaning for one Python process: accepted, ignored (and
# described with the value given). Every broker config Kafka 4.3 defines is one, unless minikafka
# implements it (PROPS), plus a few older names still found in server.properties files.
_LEGACY_IGNORED: frozenset[str] = frozenset({
    "process.roles", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
    "controller.listener.names", "inter.broker.listener.name", "listener.security.protocol.map",
    "num.network.threads", "num.io.threads", "num.replica.fetchers",
    "socket.send.buffer.bytes", "socket.receive.buffer.bytes", "queued.max.requests",
    "background.threads", "replica.lag.time.max.ms", "zookeeper.connect",
    "share.coordinator.state.topic.replication.factor", "share.coordinator.state.topic.min.isr",
    "metadata.log.dir",
    "group.coordinator.rebalance.protocols", "auto.leader.rebalance.enable",
    "log.message.format.version", "inter.broker.protocol.version", "metric.reporters",
})
PROPS_BY_NAME: dict[str, Prop] = {p.name: p for p in PROPS}
# The authorizer's own settings (Kafka hands them to StandardAuthorizer; not broker configs).
AUTHORIZER_PROPS = frozenset({"super.users", "allow.everyone.if.no.acl.found"})
IGNORED: frozenset[str] = _LEGACY_IGNORED | frozenset(n for n in KAFKA_BROKER_CONFIGS if n not in PROPS_BY_NAME)


def parse_properties_text(text: str) -> dict[str, str]:
    """Java .properties, the subset Kafka configs use: key=value or key: value, # and ! comments."""
    out: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if not line or line[0] in "#!":
            continue
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        for i, ch in enumerate(line):
            if ch in "=:":
                out[line[:i].strip()] = line[i + 1 :].strip()
                break
        else:
            out[line] = ""
    return out


@dataclasses.dataclass(frozen=True)
class BrokerConfig:
    """Resolved settings. `values` maps every known property name to its typed value."""

    values: Mapping[str, Any]
    explicit: frozenset[str]  # properties set in the file or by --override
    data_dir: Path
    host: str
    port: int
    advertised_host: str
    advertised_port: int
    ignored: Mapping[str, str] = dataclasses.field(default_factory=dict)  # accepted, ignored, as given

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    # Derived values with Kafka's precedence rules.
    @property
    def queued_max_request_bytes(self) -> int:
        """The request memory budget: as set, or twice the largest request when left at -1
        (Kafka's -1 means no bound; one Python process is better off with one)."""
        queued = int(self.values["queued.max.request.bytes"])
        return queued if queued > 0 else 2 * int(self.values["socket.request.max.bytes"])

    @property
    def log_roll_ms(self) -> int:
        v = self.values["log.roll.ms"]
        return v if v is not None else self.values["log.roll.hours"] * 3600_000

    @property
    def log_retention_ms(self) -> int:
        if self.values["log.retention.ms"] is not None:
            return int(self.values["log.retention.ms"])
        if self.values["log.retention.minutes"] is not None:
            return int(self.values["log.retention.minutes"]) * 60_000
        return int(self.values["log.retention.hours"]) * 3600_000

    @property
    def node_id(self) -> int:
        return int(self.values["node.id"])

    @classmethod
    def build(
        cls,
        properties: Mapping[str, str] | None = None,
        *,
        host: str | None = None,
        port: int | None = None,
        data_dir: str | Path | None = None,
    ) -> BrokerConfig:
        """Validate properties and apply the command-line shortcuts (--host/--port/--data-dir).

        Raises ConfigError naming the property for unknown keys and invalid values.
        """
        props = dict(properties or {})
        values: dict[str, Any] = {p.name: p.default for p in PROPS}
        ignored: dict[str, str] = {}
        for key, raw in props.items():
            if key in IGNORED or key.startswith("listener.name.") or key in AUTHORIZER_PROPS:
                # listener.name.<listener>.<config>: a listener's own security settings (security/)
                ignored[key] = raw
                continue
            prop = PROPS_BY_NAME.get(key)
            if prop is None:
                raise ConfigError(f"unknown property {key!r}")
            try:
                value = prop.parse(raw)
            except ValueError as exc:
                raise ConfigError(f"invalid value {raw!r} for {key}: {exc}") from None
            if not prop.check(value):
                raise ConfigError(f"invalid value {raw!r} for {key}: out of range")
            values[key] = value
        queued = values["queued.max.request.bytes"]
        if queued > 0 and queued < values["socket.request.max.bytes"]:
            # Kafka refuses this too: one request of the largest allowed size could never be read.
            raise ConfigError(f"queued.max.request.bytes ({queued}) must be at least "
                              f"socket.request.max.bytes ({values['socket.request.max.bytes']})")
        if values["broker.id"] >= 0 and "node.id" not in props:
            values["node.id"] = values["broker.id"]

        listeners = [p.strip() for p in values["listeners"].split(",") if p.strip()]
        l_name, l_host, l_port = _parse_listener(listeners[0])
        bind_host = host if host is not None else l_host
        bind_port = port if port is not None else l_port
        if host is not None or port is not None:
            # --host/--port give the first listener's address; the others stay as configured.
            shown = f"[{bind_host}]" if ":" in bind_host else bind_host
            values["listeners"] = ",".join([f"{l_name}://{shown}:{bind_port}", *listeners[1:]])
        if values["advertised.listeners"]:
            first = next(iter(filter(None, values["advertised.listeners"].split(","))))
            _, adv_host, adv_port = _parse_listener(first.strip())
        else:
            adv_host, adv_port = bind_host or "127.0.0.1", bind_port
            if adv_host in ("0.0.0.0", "::", ""):
                adv_host = "127.0.0.1"

        if data_dir is not None:
            path = Path(data_dir)
            values["log.dirs"] = str(path)
        else:
            first_dir = (values["log.dirs"] or values["log.dir"]).split(",")[0].strip()
            path = Path(first_dir)
        return cls(values=values, explicit=frozenset(props), data_dir=path, host=bind_host, port=bind_port,
                   advertised_host=adv_host, advertised_port=adv_port, ignored=ignored)


def load(
    config_file: str | Path | None = None,
    overrides: Iterable[str] = (),
    *,
    host: str | None = None,
    port: int | None = None,
    data_dir: str | Path | None = None,
) -> BrokerConfig:
    props: dict[str, str] = {}
    if config_file is not None:
        try:
            props.update(parse_properties_text(Path(config_file).read_text()))
        except OSError as exc:
            raise ConfigError(f"cannot read config file {config_file}: {exc}") from None
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"--override expects key=value, got {item!r}")
        k, v = item.split("=", 1)
        props[k.strip()] = v.strip()
    return BrokerConfig.build(props, host=host, port=port, data_dir=data_dir)


