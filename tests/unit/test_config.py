"""Broker configuration: Kafka property names, defaults, precedence and validation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from minikafka import config as mk_config
from minikafka.config import BrokerConfig, ConfigError, load, parse_properties_text
from minikafka.topic_config import TOPIC_CONFIGS, parse_topic_config, topic_defaults

pytestmark = pytest.mark.unit


def build(**props: str) -> BrokerConfig:
    return BrokerConfig.build({k.replace("_", "."): v for k, v in props.items()})


# ----------------------------------------------------------------------------- properties file
def test_parse_properties_text():
    text = """
# a comment
! another comment
node.id=7
num.partitions = 3
log.dirs: /var/lib/kafka
listeners=PLAINTEXT://127.0.0.1:9093,\\
  CONTROLLER://127.0.0.1:9094
log.retention.hours=24
empty.value=
   leading.space=1
"""
    props = parse_properties_text(text)
    assert props == {
        "node.id": "7",
        "num.partitions": "3",
        "log.dirs": "/var/lib/kafka",
        "listeners": "PLAINTEXT://127.0.0.1:9093,CONTROLLER://127.0.0.1:9094",
        "log.retention.hours": "24",
        "empty.value": "",
        "leading.space": "1",
    }


def test_load_file_and_override_precedence(tmp_path):
    f = tmp_path / "server.properties"
    f.write_text("num.partitions=3\nlog.segment.bytes=5000\nauto.create.topics.enable=false\n")
    c = load(f, ["num.partitions=5", "log.roll.ms = 1234"])
    assert c["num.partitions"] == 5            # --override wins over the file
    assert c["log.segment.bytes"] == 5000      # from the file
    assert c["auto.create.topics.enable"] is False
    assert c["log.roll.ms"] == 1234
    assert c.log_roll_ms == 1234
    assert {"num.partitions", "log.segment.bytes", "log.roll.ms"} <= c.explicit
    # A later --override of the same key wins over an earlier one.
    assert load(None, ["num.partitions=2", "num.partitions=9"])["num.partitions"] == 9


def test_override_value_may_contain_equals():
    c = load(None, ["advertised.listeners=PLAINTEXT://h:1"])
    assert (c.advertised_host, c.advertised_port) == ("h", 1)


def test_missing_config_file_is_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        load(tmp_path / "nope.properties")


def test_override_without_equals_is_config_error():
    with pytest.raises(ConfigError, match="key=value"):
        load(None, ["num.partitions"])


# ----------------------------------------------------------------------------- defaults
def test_kafka_defaults():
    c = BrokerConfig.build({})
    assert c["num.partitions"] == 1
    assert c["auto.create.topics.enable"] is True
    assert c["delete.topic.enable"] is True
    assert c["log.segment.bytes"] == 1024 * 1024 * 1024
    assert c["log.retention.bytes"] == -1
    assert c["log.index.interval.bytes"] == 4096
    assert c["log.index.size.max.bytes"] == 10 * 1024 * 1024
    assert c["message.max.bytes"] == 1048588
    assert c["socket.request.max.bytes"] == 100 * 1024 * 1024
    assert c["connections.max.idle.ms"] == 600000
    assert c["offsets.topic.num.partitions"] == 50
    assert c["transaction.state.log.num.partitions"] == 50
    assert c["group.initial.rebalance.delay.ms"] == 3000
    assert c["transaction.max.timeout.ms"] == 900000
    assert c["log.message.timestamp.type"] == "CreateTime"
    assert c["log.cleanup.policy"] == "delete"
    assert c.log_retention_ms == 168 * 3600 * 1000
    assert c.log_roll_ms == 168 * 3600 * 1000
    assert (c.host, c.port) == ("127.0.0.1", 9092)
    assert (c.advertised_host, c.advertised_port) == ("127.0.0.1", 9092)
    assert c.node_id == 1
    assert c.explicit == frozenset()


def test_topic_defaults_follow_broker_settings():
    c = build(log_segment_bytes="2048", log_retention_minutes="3", message_max_bytes="999",
              log_flush_interval_messages="10")
    d = topic_defaults(c)
    assert d["segment.bytes"] == 2048
    assert d["retention.ms"] == 180_000
    assert d["max.message.bytes"] == 999
    assert d["flush.messages"] == 10
    assert d["flush.ms"] == mk_config.LONG_MAX
    assert d["segment.ms"] == 168 * 3600 * 1000
    assert d["cleanup.policy"] == "delete"
    assert d["index.interval.bytes"] == 4096
    assert set(d) == set(TOPIC_CONFIGS)


def test_parse_topic_config():
    assert parse_topic_config("retention.ms", "100") == 100
    assert parse_topic_config("cleanup.policy", "compact") == "compact"
    with pytest.raises(ConfigError, match="Unknown topic config name"):
        parse_topic_config("retention.forever", "1")
    with pytest.raises(ConfigError, match="segment.bytes"):
        parse_topic_config("segment.bytes", "big")


# ----------------------------------------------------------------------------- validation
def test_unknown_property_is_config_error():
    with pytest.raises(ConfigError, match="bogus.key"):
        BrokerConfig.build({"bogus.key": "1"})


@pytest.mark.parametrize(("key", "value"), [
    ("num.partitions", "0"),
    ("num.partitions", "three"),
    ("auto.create.topics.enable", "yes"),
    ("log.segment.bytes", "10"),
    ("log.message.timestamp.type", "WallClock"),
    ("listeners", "127.0.0.1:9092"),
    ("listeners", "PLAINTEXT://127.0.0.1:port"),
    ("advertised.listeners", "PLAINTEXT://h:"),
    ("log.roll.ms", "0"),
    ("log.retention.ms", "1.5"),
    ("node.id", "-1"),
])
def test_invalid_value_is_config_error(key, value):
    with pytest.raises(ConfigError) as e:
        BrokerConfig.build({key: value})
    assert key in str(e.value)


@pytest.mark.parametrize("key", [
    "process.roles", "controller.quorum.voters", "num.network.threads", "num.io.threads",
    "socket.send.buffer.bytes", "zookeeper.connect", "inter.broker.listener.name",
    "listener.security.protocol.map", "controller.listener.names",
])
def test_ignored_kafka_properties_are_accepted(key):
    c = BrokerConfig.build({key: "whatever"})
    assert key not in c.values


def test_a_real_kraft_server_properties_is_accepted(tmp_path):
    f = tmp_path / "server.properties"
    f.write_text("""
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://localhost:19092,CONTROLLER://localhost:19093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:19092
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
""")
    c = load(f)
    assert (c.host, c.port) == ("localhost", 19092)
    assert c.data_dir == Path("/tmp/kraft-combined-logs")


# ----------------------------------------------------------------------------- precedence rules
def test_log_retention_precedence():
    assert build(log_retention_hours="2").log_retention_ms == 2 * 3600_000
    assert build(log_retention_hours="2", log_retention_minutes="5").log_retention_ms == 5 * 60_000
    assert build(log_retention_hours="2", log_retention_minutes="5",
                 log_retention_ms="777").log_retention_ms == 777
    assert build(log_retention_ms="-1").log_retention_ms == -1
    assert build(log_retention_minutes="5", log_retention_ms="-1").log_retention_ms == -1


def test_log_roll_precedence():
    assert build(log_roll_hours="1").log_roll_ms == 3600_000
    assert build(log_roll_hours="1", log_roll_ms="50").log_roll_ms == 50


def test_broker_id_supplies_node_id():
    assert build(broker_id="4").node_id == 4
    assert build(broker_id="4", node_id="6").node_id == 6


# ----------------------------------------------------------------------------- listeners
def test_listeners_and_advertised_listeners():
    c = build(listeners="PLAINTEXT://0.0.0.0:19092")
    assert (c.host, c.port) == ("0.0.0.0", 19092)
    assert (c.advertised_host, c.advertised_port) == ("127.0.0.1", 19092)  # never advertise 0.0.0.0
    c = build(listeners="PLAINTEXT://0.0.0.0:19092", advertised_listeners="PLAINTEXT://broker.example:29092")
    assert (c.advertised_host, c.advertised_port) == ("broker.example", 29092)
    c = build(listeners="PLAINTEXT://[::1]:9999")
    assert (c.host, c.port) == ("::1", 9999)
    c = build(listeners="PLAINTEXT://:9092")
    assert c.advertised_host == "127.0.0.1"


def test_host_and_port_flags_override_listeners():
    c = BrokerConfig.build({"listeners": "PLAINTEXT://127.0.0.1:9092"}, host="127.0.0.2", port=10000)
    assert (c.host, c.port) == ("127.0.0.2", 10000)
    assert c["listeners"] == "PLAINTEXT://127.0.0.2:10000"
    assert (c.advertised_host, c.advertised_port) == ("127.0.0.2", 10000)
    c = BrokerConfig.build({"listeners": "PLAINTEXT://127.0.0.1:9092"}, port=10001)
    assert (c.host, c.port) == ("127.0.0.1", 10001)


def test_data_dir_resolution(tmp_path):
    assert BrokerConfig.build({}).data_dir == Path("/tmp/kafka-logs")
    assert build(log_dir="/a").data_dir == Path("/a")
    assert build(log_dir="/a", log_dirs="/b,/c").data_dir == Path("/b")
    c = BrokerConfig.build({"log.dirs": "/b"}, data_dir=tmp_path)
    assert c.data_dir == tmp_path
    assert c["log.dirs"] == str(tmp_path)


# ----------------------------------------------------------------------------- CLI
def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "minikafka", "serve", "--port", "1", *args],
                          capture_output=True, text=True, timeout=60, cwd=cwd)


def test_cli_unknown_property_exits_nonzero_naming_it(tmp_path):
    r = _cli("--data-dir", str(tmp_path / "d"), "--override", "bogus.key=1", cwd=tmp_path)
    assert r.returncode != 0
    assert "bogus.key" in r.stderr
    assert "configuration error" in r.stderr
    assert not (tmp_path / "d").exists(), "nothing is written when the configuration is refused"


def test_cli_invalid_value_exits_nonzero_naming_it(tmp_path):
    r = _cli("--data-dir", str(tmp_path / "d"), "--override", "num.partitions=zero", cwd=tmp_path)
    assert r.returncode != 0
    assert "num.partitions" in r.stderr


def test_cli_bad_config_file_exits_nonzero(tmp_path):
    f = tmp_path / "server.properties"
    f.write_text("log.segment.bytes=tiny\n")
    r = _cli("--config", str(f), cwd=tmp_path)
    assert r.returncode != 0
    assert "log.segment.bytes" in r.stderr
