"""Broker: the composition root. Builds storage, services, handlers and the server; runs the
background tasks (retention, time-based flush, checkpoints); shuts down cleanly."""

from __future__ import annotations

import asyncio
import dataclasses
import signal
from collections.abc import Awaitable, Callable

import structlog

from minikafka.broker.dispatch import HandlerRegistry
from minikafka.broker.handlers import default_handlers
from minikafka.broker.producer_id_store import FileProducerIdBlockStore
from minikafka.broker.purgatory import FetchPurgatory
from minikafka.broker.server import KafkaServer
from minikafka.broker.services import BrokerServices
from minikafka.clock import Clock, SystemClock
from minikafka.config import BrokerConfig, parse_topic_config, topic_defaults
from minikafka.coordinator.producer_ids import ProducerIdAllocator
from minikafka.storage.log_manager import LogManager

log = structlog.get_logger("minikafka.broker")


class Broker:
    def __init__(self, config: BrokerConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.clock = clock or SystemClock()
        self.logs = LogManager(config.data_dir, node_id=config.node_id,
                               topic_defaults=topic_defaults(config),
                               topic_config_parser=parse_topic_config,
                               cluster_id=config["cluster.id"] or None)
        self.purgatory = FetchPurgatory()
        self.services = BrokerServices(config=config, logs=self.logs, clock=self.clock,
                                       purgatory=self.purgatory,
                                       producer_ids=ProducerIdAllocator(FileProducerIdBlockStore(config.data_dir)))
        self.registry = HandlerRegistry(default_handlers(self.services))
        self.services.served = self.registry.served
        self.server = KafkaServer(self.registry, host=config.host, port=config.port,
                                  max_frame_size=int(config["socket.request.max.bytes"]),
                                  idle_ms=int(config["connections.max.idle.ms"]),
                                  now_ms=self.clock.now_ms, monotonic_ms=self.clock.monotonic_ms)
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = asyncio.Event()

    async def start(self) -> None:
        self.logs.startup(self.clock.now_ms())
        for topic in list(self.logs.topics):
            self.services.watch_new_partitions(topic)
        await self.server.start()
        if self.config.advertised_port == 0:
            cfg = dataclasses.replace(self.config, advertised_port=self.server.port)
            self.config = cfg
            self.services.config = cfg
        c = self.config
        self._every(int(c["log.retention.check.interval.ms"]), self._retention)
        self._every(int(c["producer.id.expiration.check.interval.ms"]), self._expire_producers)
        self._every(int(c["log.flush.offset.checkpoint.interval.ms"]), self._checkpoint)
        if c["log.flush.interval.ms"] is not None or c["log.flush.scheduler.interval.ms"] < 2**62:
            self._every(min(int(c["log.flush.scheduler.interval.ms"]), 1000), self._flush)
        log.info("broker_started", node_id=c.node_id, port=self.server.port, data_dir=str(c.data_dir),
                 cluster_id=self.logs.cluster_id)

    def _every(self, interval_ms: int, fn: Callable[[], Awaitable[None] | None]) -> None:
        async def loop() -> None:
            while True:
                await asyncio.sleep(interval_ms / 1000)
                try:
                    result = fn()
                    if result is not None:
                        await result
                except Exception:
                    log.exception("background_task_failed", task=fn.__name__)
        self._tasks.append(asyncio.create_task(loop()))

    def _retention(self) -> None:
        self.logs.delete_retained(self.clock.now_ms())

    def _expire_producers(self) -> None:
        self.logs.expire_producers(self.clock.now_ms(), int(self.config["producer.id.expiration.ms"]))

    def _checkpoint(self) -> None:
        self.logs.checkpoint()

    def _flush(self) -> None:
        self.logs.flush_by_time(self.clock.now_ms())

    def request_stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        """Serve until SIGTERM/SIGINT, then shut down cleanly."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        await self.start()
        await self._stopping.wait()
        await self.shutdown()

    async def shutdown(self) -> None:
        log.info("broker_stopping")
        self.purgatory.notify_all()
        await self.server.stop()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.logs.shutdown()
        log.info("broker_stopped")
