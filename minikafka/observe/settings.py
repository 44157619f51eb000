"""Where the observe room serves (off unless asked for): plain settings, importable without
aiohttp or prometheus_client, so the broker reads them at no start-up cost."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass


class ObserveError(ValueError):
    """Settings the observe server refuses to start with."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int  # 0: a free port, chosen at start

    @property
    def loopback(self) -> bool:
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return self.host == "localhost"


@dataclass(frozen=True, slots=True)
class ObserveSettings:
    metrics: Endpoint | None = None
    console: Endpoint | None = None
    console_actions: bool = False

    def check(self) -> None:
        if self.console_actions and self.console is None:
            raise ObserveError("--console-actions needs the console (--console-port)")
        if self.console_actions and self.console is not None and not self.console.loopback:
            raise ObserveError(f"the console's actions are served on loopback only, not {self.console.host} "
                               "(they have no authentication)")

    @property
    def enabled(self) -> bool:
        return self.metrics is not None or self.console is not None
