"""S1: the cost of TLS + SASL, minikafka vs Kafka (issue 21, "Benchmark").

Per broker, one start with two listeners: PLAINTEXT and SASL_SSL (SCRAM-SHA-512, a PEM key store
made by `minikafka certs`'s code; TLS 1.3 as both negotiate it). After an untimed warm-up over
each listener (`s1_records` each: the JVM's JIT, as P2's warm-up does), the same producer (P2's
settings, 1 KiB records, `s1_records`) and catch-up consumer run over each listener in turn, on
topics of one partition; reported per listener: records/s and broker CPU-s per GB, and the TLS cost ratio
(SASL_SSL / PLAINTEXT throughput) of each broker, so the two brokers' costs can be compared side by
side. Kafka runs KRaft combined mode: its CONTROLLER listener stays PLAINTEXT.
"""

from __future__ import annotations

from typing import Any

from .brokers import ApacheKafka, Broker, MiniKafka, free_port
from .runner import create_topics, log

SCRAM_USER, SCRAM_PASSWORD = "bench", "bench-secret"


def _configure(b: Broker, port: int, certs: Any) -> None:
    """Give the (not yet started) broker its SASL_SSL listener on `port`."""
    tls = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.broker_pem),
           "sasl.enabled.mechanisms": "SCRAM-SHA-512"}
    if isinstance(b, MiniKafka):
        b.overrides.update({"listeners": f"PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:{port}", **tls})
    elif isinstance(b, ApacheKafka):
        b.extra_props.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{b.port},CONTROLLER://127.0.0.1:{b.controller_port},"
                         f"SASL_SSL://127.0.0.1:{port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{b.port},SASL_SSL://127.0.0.1:{port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            **tls})
    else:
        raise RuntimeError(f"S1 does not know how to secure {b.name}")


def measure(runner: Any, name: str, rep: int) -> None:
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    from minikafka.security.certs import make_certs

    p = runner.p
    b = runner.new_broker(name, f"s1-{rep}")
    certs = make_certs(b.workdir / "certs")
    port = free_port({b.port, getattr(b, "controller_port", 0)})
    _configure(b, port, certs)
    b.start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                SCRAM_USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), SCRAM_PASSWORD.encode())]).values():
            f.result(60)
        create_topics(b.bootstrap, {"s1-plaintext": 1, "s1-sasl_ssl": 1, "s1-warm-plaintext": 1, "s1-warm-sasl_ssl": 1})
        listeners = {
            "plaintext": {"bootstrap": b.bootstrap, "conf": {}},
            "sasl_ssl": {"bootstrap": f"127.0.0.1:{port}", "conf": {
                "security.protocol": "SASL_SSL", "ssl.ca.location": str(certs.ca), "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": SCRAM_USER, "sasl.password": SCRAM_PASSWORD}},
        }
        for point, how in listeners.items():  # untimed: the JVM's JIT, connections, the TLS session
            runner.client("produce", {"bootstrap": how["bootstrap"], "topic": f"s1-warm-{point}", "mode": "plain",
                                      "records": p["s1_records"], "size": p["record_size"], "seed": runner.seed,
                                      "conf": how["conf"]}, b)
        for point, how in listeners.items():
            topic = f"s1-{point}"

            def produce(how: dict[str, Any] = how, topic: str = topic) -> dict[str, Any]:
                r = runner.client("produce", {"bootstrap": how["bootstrap"], "topic": topic, "mode": "plain",
                                              "records": p["s1_records"], "size": p["record_size"], "seed": runner.seed,
                                              "conf": how["conf"]}, b)
                log(f"  {name} S1 produce over {point}: {r['records_per_s']:.0f} rec/s")
                return r

            def consume(how: dict[str, Any] = how, topic: str = topic) -> dict[str, Any]:
                r = runner.client("consume", {"bootstrap": how["bootstrap"], "topic": topic, "expected": "hwm",
                                              "conf": how["conf"]}, b)
                log(f"  {name} S1 consume over {point}: {r['records_per_s']:.0f} rec/s")
                return r

            runner.guarded(name, rep, "S1", f"produce_{point}", produce)
            runner.guarded(name, rep, "S1", f"consume_{point}", consume)
        for kind in ("produce", "consume"):
            got = {pt: next((s.get("records_per_s") for s in reversed(runner.samples)
                             if s["broker"] == name and s["rep"] == rep and s["scenario"] == "S1"
                             and s["point"] == f"{kind}_{pt}"), None) for pt in ("plaintext", "sasl_ssl")}
            if got["plaintext"] and got["sasl_ssl"]:
                runner.add(name, rep, "S1", f"{kind}_tls_cost", {"ratio": got["sasl_ssl"] / got["plaintext"]})
    finally:
        b.stop()
