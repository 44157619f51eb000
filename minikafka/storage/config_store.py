"""Dynamic configs of resources that have no log of their own (group configs), kept as one JSON
file in the data dir: `{resource name: {config name: value}}`, rewritten atomically on each change.
Kafka keeps them in its metadata log as ConfigRecords; one node needs no more than a file."""

from __future__ import annotations

import json
from pathlib import Path

import structlog

from minikafka.storage import files

log = structlog.get_logger("minikafka.storage")


class DynamicConfigStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._configs: dict[str, dict[str, str]] = {}
        if path.exists():
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
                self._configs = {str(k): {str(n): str(v) for n, v in c.items()} for k, c in doc.items()}
            except (ValueError, AttributeError, OSError) as exc:
                # A damaged file loses the overrides, never the broker: defaults apply, said once.
                log.warning("dynamic_configs_unreadable", path=str(path), reason=str(exc),
                            hint="the overrides in this file are lost; set them again")

    def names(self) -> list[str]:
        """The resources that have overrides, sorted."""
        return sorted(self._configs)

    def get(self, resource: str) -> dict[str, str]:
        return dict(self._configs.get(resource, {}))

    def set(self, resource: str, overrides: dict[str, str]) -> None:
        """Replace a resource's overrides (none: forget it); raises OSError when the disk refuses."""
        configs = dict(self._configs)
        if overrides:
            configs[resource] = dict(overrides)
        else:
            configs.pop(resource, None)
        files.atomic_write(self.path, json.dumps(configs, indent=1, sort_keys=True).encode())
        self._configs = configs
