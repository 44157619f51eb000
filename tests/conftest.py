"""Suite-wide test wiring: `tests/` on sys.path, and the conformance mode.

Conformance mode (`make conformance`): with ``MINIKAFKA_TARGET=kafka`` the integration tests run
against a real Apache Kafka 4.x instead of minikafka. One Kafka broker is started for the whole
session through ``tests/kafka_ref.py`` (jars from Maven Central, see bench/kafka/README.md), and
the plugin's ``kafka_broker`` fixture is overridden to hand tests an ``ExternalBroker`` on it, so
tests that restart the broker or read its files skip. An explicit ``KAFKA_BOOTSTRAP`` is used
instead of starting Kafka. Without Java (or without Maven and no cached jars) these tests skip
with the reason.

The Kafka broker is shared by the session: tests must use their own topic and group names.
"""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from minikafka.testing import ExternalBroker

TARGET = os.environ.get("MINIKAFKA_TARGET", "minikafka").strip().lower() or "minikafka"
KAFKA_HEAP = os.environ.get("KAFKA_HEAP_OPTS", "-Xmx512m")
# Settings for the reference broker on top of bench/kafka/server.properties.in (which already has
# the test-speed settings of minikafka.testing.TEST_OVERRIDES).
KAFKA_EXTRA_PROPS: dict[str, str] = {
    "auto.create.topics.enable": "true",
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",
}


def conformance_mode() -> bool:
    """True when the suite runs against Apache Kafka (MINIKAFKA_TARGET=kafka)."""
    return TARGET == "kafka"


def pytest_configure(config: pytest.Config) -> None:
    if TARGET not in ("minikafka", "kafka"):
        raise pytest.UsageError(f"MINIKAFKA_TARGET={TARGET!r}: expected 'minikafka' or 'kafka'")
    # Every broker a test spawns imports the package afresh; where bytecode is not written
    # (PYTHONDONTWRITEBYTECODE, as on the CI machines) each would compile it from source, ~80 ms
    # a start. Compiled once here, as a pip install of the wheel would have done.
    import compileall

    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "minikafka"), quiet=2)


def pytest_report_header(config: pytest.Config) -> str:
    if not conformance_mode():
        return "target: minikafka"
    where = os.environ.get("KAFKA_BOOTSTRAP") or "Apache Kafka started by the session"
    return f"target: Apache Kafka (conformance mode): {where}"


# ---------------------------------------------------------------------------------------------
# No librdkafka client outlives its test (issue 14, item 7). A client left open keeps reconnecting
# to a broker its test already stopped ("Connection refused" on stderr) and keeps threads and
# sockets for the rest of the session. After the test body, unreachable clients are collected
# before fixtures stop brokers; after teardown, a Producer or Consumer still open that the test
# created fails the test (and is closed, so one leak does not spill into the next test).


def _live_clients() -> list[Any]:
    from confluent_kafka import Consumer, Producer

    return [o for o in gc.get_objects() if isinstance(o, Producer | Consumer)]


def _is_open(client: Any) -> bool:
    # Only calls that never wait on the client's own threads: a test that failed may have left a
    # thread inside consume() on this very client, and assignment() would then block for ever.
    try:
        client.memberid() if hasattr(client, "memberid") else client.poll(0)
    except RuntimeError:
        return False  # "Producer has been closed" / "Consumer closed"
    return True


def _close_within(client: Any, seconds: float) -> None:
    """Best-effort close that cannot hang the session: a producer left mid-transaction by a
    failed test closes by aborting it, which waits for a coordinator that may be gone."""
    if hasattr(client, "purge"):
        try:
            client.purge(in_queue=True, in_flight=True, blocking=False)
        except Exception:  # noqa: BLE001 - closing is best effort; the failure below says why
            pass

    def close() -> None:
        try:
            client.close()
        except Exception:  # noqa: BLE001
            pass

    t = threading.Thread(target=close, daemon=True, name="leaked-client-close")
    t.start()
    t.join(seconds)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    if item.get_closest_marker("unit") is None:  # unit tests make no clients: skip the heap walk
        # What lives now predates the test: frozen until its teardown's check is done, the
        # collections and the heap walks below see only what this test makes. By the end of
        # `make test` the session's heap is large enough that each walk of all of it cost a test
        # ~0.5 s (measured on the last tests of the run). Unfrozen after: what becomes garbage
        # later is collected as usual.
        # (A frozen object is not in gc.get_objects(): every client the check finds is new.)
        gc.freeze()
        item._leak_checked = True  # type: ignore[attr-defined]
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    finally:
        if hasattr(item, "_leak_checked"):
            gc.collect()  # what the test body dropped is destroyed while its broker still runs


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    result = yield
    if not hasattr(item, "_leak_checked"):
        return result
    try:
        gc.collect()
        leaked = [c for c in _live_clients() if _is_open(c)]
    finally:
        gc.unfreeze()
    for c in leaked:
        _close_within(c, 5.0)
    if leaked:
        names = ", ".join(sorted(type(c).__name__ for c in leaked))
        pytest.fail(f"the test left {len(leaked)} client(s) open: {names}; close them (Consumer.close(), "
                    "Producer.flush() and close()) before its broker stops", pytrace=False)
    return result


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test under tests/unit is a unit test, whether or not its file says so.

    In conformance mode a test that never asks for `kafka_broker` would only exercise minikafka
    (it starts its own BrokerProcess): skip it rather than report it as a Kafka result."""
    for item in items:
        if item.path.is_relative_to(TESTS_DIR / "unit"):
            item.add_marker(pytest.mark.unit)
    if not conformance_mode():
        return
    skip = pytest.mark.skip(reason="conformance mode: test does not use the kafka_broker fixture")
    for item in items:
        names = getattr(item, "fixturenames", ())
        if not CONFORMANCE_FIXTURES & set(names):
            item.add_marker(skip)


# Fixtures that hand a test Apache Kafka in conformance mode: the shared one, one with the test's
# settings, the security modules' brokers (start_secured), and Kafka with the JMX exporter's agent
# (test_observe_kafka_names.py).
CONFORMANCE_FIXTURES = {"kafka_broker", "configured_broker", "secured", "authz", "oauth_broker",
                        "kafka_with_jmx_exporter"}


@pytest.fixture(scope="session")
def apache_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Bootstrap address of the session's Apache Kafka (conformance mode only)."""
    if not conformance_mode():
        pytest.skip("Apache Kafka runs only with MINIKAFKA_TARGET=kafka")
    explicit = os.environ.get("KAFKA_BOOTSTRAP")
    if explicit:
        yield explicit
        return
    import kafka_ref

    try:
        kafka_ref.ensure_kafka_jars()
    except kafka_ref.KafkaRefError as exc:
        pytest.skip(f"Apache Kafka unavailable: {str(exc).splitlines()[0]}")
    kafka = kafka_ref.ApacheKafka(heap_opts=KAFKA_HEAP)
    kafka.start(tmp_path_factory.mktemp("apache-kafka"), extra_props=KAFKA_EXTRA_PROPS)
    try:
        _warm_up(kafka.bootstrap)
        yield kafka.bootstrap
    finally:
        kafka.stop()


WARMUP_TOPIC = "conformance-warmup"


def _warm_up(bootstrap: str, timeout: float = 60.0) -> None:
    """Take Apache Kafka past its first-use states before the tests compare it with minikafka
    (which has none): a fresh Kafka answers the first InitProducerId with
    COORDINATOR_LOAD_IN_PROGRESS until its producer-id block arrives, and creates
    `__consumer_offsets` / `__transaction_state` on the first FindCoordinator
    (COORDINATOR_NOT_AVAILABLE meanwhile). Clients retry these; raw-protocol tests do not."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    quiet = {"bootstrap.servers": bootstrap, "log_level": 3}
    producer = Producer({**quiet, "enable.idempotence": True})
    producer.produce(WARMUP_TOPIC, b"warm-up")
    if producer.flush(timeout) != 0:
        raise RuntimeError("Apache Kafka warm-up: idempotent produce did not complete")
    consumer = Consumer({**quiet, "group.id": WARMUP_TOPIC, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(WARMUP_TOPIC, 0, 1)], asynchronous=False)
    finally:
        consumer.close()
    txn = Producer({**quiet, "transactional.id": WARMUP_TOPIC})
    txn.init_transactions(timeout)
    txn.begin_transaction()
    txn.produce(WARMUP_TOPIC, b"warm-up")
    txn.commit_transaction(timeout)


if conformance_mode():

    @pytest.fixture
    def kafka_broker(apache_kafka: str) -> Iterator[ExternalBroker]:  # overrides the plugin's
        yield ExternalBroker(apache_kafka)

    @pytest.fixture
    def broker_factory() -> Any:  # overrides the plugin's: only minikafka takes these settings
        pytest.skip("conformance mode: broker_factory starts minikafka brokers")


class ConfiguredBroker:
    """What `configured_broker` hands out: where the broker listens and what it advertises."""

    def __init__(self, host: str, port: int, advertised_port: int, process: Any) -> None:
        self.host, self.port = host, port
        self.bootstrap = f"{host}:{advertised_port}"
        self.process = process  # minikafka.testing.BrokerProcess or kafka_ref.ApacheKafka
        self.external = conformance_mode()

    def warm_up(self) -> None:
        """Apache Kafka only (see _warm_up): call it once the address it advertises answers, i.e.
        with a fault proxy running there. A no-op for minikafka, which has no first-use states."""
        if self.external:
            _warm_up(self.bootstrap)


@pytest.fixture
def configured_broker(tmp_path: Path) -> Iterator[Any]:
    """Start a broker with broker settings of the test's own (expiration times, an advertised port
    for a fault proxy): ``configured_broker(overrides={...}, advertise_port=None, env=None)``.

    It is minikafka normally and a dedicated Apache Kafka in conformance mode, so scenarios that
    need non-default settings are compared with Kafka too (the session's shared Kafka cannot take
    them). `env` (MINIKAFKA_CRASH_AT) and `faults` (the broker's fault rules, as
    `broker.process.faults`) are minikafka-only; with `advertise_port` the PLAINTEXT listener is
    advertised at 127.0.0.1:<advertise_port>, where the test runs its proxy."""
    from minikafka.testing import BrokerProcess

    started: list[Any] = []

    def make(overrides: dict[str, str] | None = None, advertise_port: int | None = None,
             env: dict[str, str] | None = None, faults: bool = False) -> ConfiguredBroker:
        overrides = dict(overrides or {})
        name = f"configured-{len(started)}"
        if not conformance_mode():
            if os.environ.get("KAFKA_BOOTSTRAP"):
                pytest.skip("needs a broker started by the test")
            if advertise_port is not None:
                overrides["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{advertise_port}"
            b = BrokerProcess(tmp_path / name, overrides=overrides, env=env, control=faults).start()
            started.append(b)
            return ConfiguredBroker(b.host, b.port, advertise_port or b.port, b)
        if env or faults:
            pytest.skip("conformance mode: the scenario needs minikafka's fault rules")
        import kafka_ref

        try:
            kafka_ref.ensure_kafka_jars()
        except kafka_ref.KafkaRefError as exc:
            pytest.skip(f"Apache Kafka unavailable: {str(exc).splitlines()[0]}")
        exclude = {advertise_port} if advertise_port else set()
        port, controller_port = kafka_ref.free_ports(2, exclude=exclude)
        props = {**KAFKA_EXTRA_PROPS, **overrides}
        if advertise_port is not None:
            # CONTROLLER stays as in the template (KRaft needs it); only PLAINTEXT moves.
            props["advertised.listeners"] = (f"PLAINTEXT://127.0.0.1:{advertise_port},"
                                             f"CONTROLLER://127.0.0.1:{controller_port}")
        kafka = kafka_ref.ApacheKafka(heap_opts=KAFKA_HEAP)
        started.append(kafka)
        kafka.start(tmp_path / name, port=port, controller_port=controller_port, extra_props=props)
        broker = ConfiguredBroker("127.0.0.1", kafka.port, advertise_port or kafka.port, kafka)
        if advertise_port is None:
            broker.warm_up()
        return broker

    yield make
    for b in started:
        b.stop()


class SecuredBroker:
    """A broker started with listener and security settings of a test module's own (TLS, SASL,
    ACLs): minikafka normally, and in conformance mode an Apache Kafka given the same settings
    (plus the CONTROLLER listener KRaft needs, and the broker-side SCRAM JAAS entries Kafka asks
    for), so the security tests compare with Kafka. `bootstrap` is the PLAINTEXT listener."""

    def __init__(self, process: Any, port: int) -> None:
        self.process = process  # minikafka.testing.BrokerProcess or kafka_ref.ApacheKafka
        self.port = port
        self.bootstrap = f"127.0.0.1:{port}"
        self.external = conformance_mode()

    @property
    def clock(self) -> Any:
        if self.external:
            pytest.skip("conformance mode: virtual time is minikafka's")
        return self.process.clock

    def restart(self) -> None:
        if self.external:
            pytest.skip("conformance mode: the test restarts minikafka")
        self.process.restart()

    def stop(self) -> None:
        self.process.stop()


def _kafka_security_props(overrides: dict[str, str], port: int, controller_port: int) -> dict[str, str]:
    props = {**KAFKA_EXTRA_PROPS, **overrides}
    listeners = [x.strip() for x in overrides["listeners"].split(",") if x.strip()]
    listeners = [x.replace("PLAINTEXT://127.0.0.1:0", f"PLAINTEXT://127.0.0.1:{port}") for x in listeners]
    props["listeners"] = ",".join([*listeners, f"CONTROLLER://127.0.0.1:{controller_port}"])
    props["advertised.listeners"] = ",".join(listeners)
    props["listener.security.protocol.map"] = ("CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,"
                                               "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL")
    for name in ("SASL_SSL", "SASL_PLAINTEXT"):
        if not any(x.startswith(name + "://") for x in listeners):
            continue
        prefix = f"listener.name.{name.lower()}."
        mechanisms = props.get(prefix + "sasl.enabled.mechanisms") or props.get("sasl.enabled.mechanisms", "")
        for mechanism in (m.strip() for m in mechanisms.split(",")):
            if mechanism.startswith("SCRAM-"):  # Kafka's broker wants a JAAS entry for each mechanism
                props.setdefault(f"{prefix}{mechanism.lower()}.sasl.jaas.config",
                                 "org.apache.kafka.common.security.scram.ScramLoginModule required;")
    return props


def start_secured(data_dir: Path, overrides: dict[str, str], *, control: bool = False,
                  env: dict[str, str] | None = None) -> SecuredBroker:
    """Start minikafka (or, in conformance mode, Apache Kafka) with these security settings; the
    first listener must be PLAINTEXT://127.0.0.1:0 (the test's own view of the broker)."""
    from minikafka.testing import BrokerProcess

    if not conformance_mode():
        b = BrokerProcess(data_dir, overrides=overrides, control=control).start()
        return SecuredBroker(b, b.port)
    import kafka_ref

    try:
        kafka_ref.ensure_kafka_jars()
    except kafka_ref.KafkaRefError as exc:
        pytest.skip(f"Apache Kafka unavailable: {str(exc).splitlines()[0]}")
    port, controller_port = kafka_ref.free_ports(2)
    kafka = kafka_ref.ApacheKafka(heap_opts=KAFKA_HEAP, env=env)
    kafka.start(data_dir, port=port, controller_port=controller_port,
                extra_props=_kafka_security_props(overrides, port, controller_port))
    _warm_up(kafka.bootstrap)
    return SecuredBroker(kafka, port)


@pytest.fixture(scope="module")
def streams_app() -> Any:
    """Kafka's Java applications from the compat matrix (tests/compat/apps: the Streams word count,
    the Connect worker) with their jars (Kafka 4.3.1 from Maven Central) fetched once if missing:
    (streams_eos, app_support, kafka_ref). Skips without Java, or without Maven and a jar cache."""
    if shutil.which("java") is None:
        pytest.skip("Kafka Streams and Connect need Java 17+ (`java` not on PATH)")
    import kafka_ref

    kafka_ref.jars_or_skip("Kafka's tools")
    repo = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(repo / "tests" / "compat" / "apps"))
    import app_support
    import streams_eos

    if not (app_support.LIBS / ".complete").is_file():
        if shutil.which(os.environ.get("MVN", "mvn")) is None:
            pytest.skip("Kafka's application jars are not cached and Maven (`mvn`) is not on PATH")
        proc = subprocess.run([str(repo / "bench" / "kafka" / "fetch-jars.sh"), "apps"], capture_output=True,
                              text=True, timeout=900, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
    return streams_eos, app_support, kafka_ref
