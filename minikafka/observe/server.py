"""The observe room's HTTP server: `/metrics` (Prometheus text format) and the web console, on
the broker's own event loop (aiohttp), each on its own opt-in port, or both on one.

Off unless asked for (`minikafka serve --metrics-port P --console-port Q`). Loopback by default;
another address is allowed for the metrics (a Prometheus in another container scrapes them) and
the console with a warning, but the console's actions only on loopback: nothing here
authenticates its users.
"""

from __future__ import annotations

import structlog
from aiohttp import web

from minikafka.observe.ports import BrokerActions, BrokerView
from minikafka.observe.settings import Endpoint, ObserveSettings

log = structlog.get_logger("minikafka.observe")


class ObserveServer:
    def __init__(self, settings: ObserveSettings, view: BrokerView, actions: BrokerActions) -> None:
        """`settings` as the broker checked them (ObserveSettings.check)."""
        self.settings = settings
        self.view = view
        self.actions = actions
        self._runners: list[web.AppRunner] = []
        self.metrics_port: int | None = None
        self.console_port: int | None = None

    def _app(self, *, metrics: bool, console: bool) -> web.Application:
        app = web.Application()
        if metrics:
            from minikafka.observe.metrics import CONTENT_TYPE, MetricsPage

            page = MetricsPage(self.view)

            async def serve_metrics(_request: web.Request) -> web.Response:
                return web.Response(body=page.render(), headers={"Content-Type": CONTENT_TYPE})

            app.router.add_get("/metrics", serve_metrics)
        if console:
            from minikafka.observe.console.app import Console

            assert self.settings.console is not None
            c = Console(self.view, self.actions if self.settings.console_actions else None,
                        host=self.settings.console.host)
            app.middlewares.append(c.guard)
            app.add_routes(c.routes())
        return app

    async def _serve(self, app: web.Application, endpoint: Endpoint) -> int:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, endpoint.host, endpoint.port, reuse_address=True)
        await site.start()
        self._runners.append(runner)
        port = int(runner.addresses[-1][1])  # the bound port (port 0: the one the system chose)
        if not endpoint.loopback:
            log.warning("observe_not_loopback", host=endpoint.host, port=port,
                        why="anyone who can reach this address can read it")
        return port

    async def start(self) -> None:
        s = self.settings
        if s.metrics is not None and s.console is not None and s.metrics == s.console and s.metrics.port != 0:
            port = await self._serve(self._app(metrics=True, console=True), s.metrics)
            self.metrics_port = self.console_port = port
        else:
            if s.metrics is not None:
                self.metrics_port = await self._serve(self._app(metrics=True, console=False), s.metrics)
            if s.console is not None:
                self.console_port = await self._serve(self._app(metrics=False, console=True), s.console)
        log.info("observe_serving", metrics_port=self.metrics_port, console_port=self.console_port,
                 console_actions=s.console_actions)

    async def stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
