"""Client quotas kept in the data dir, one JSON file rewritten atomically on each change (Kafka
keeps them as ClientQuotaRecords in its metadata log; one node needs no more than a file):
`[{"entity": [[type, name or null], ...], "quotas": {key: value}}, ...]`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import structlog

from minikafka.storage import files

log = structlog.get_logger("minikafka.storage")

CLIENT_QUOTAS_FILE = "minikafka-client-quotas.json"

Entity = tuple[tuple[str, str | None], ...]


class ClientQuotaStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[Entity, dict[str, float]] = {}
        if not path.exists():
            return
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            for item in doc:
                entity = tuple((str(t), None if n is None else str(n)) for t, n in item["entity"])
                self.entries[entity] = {str(k): float(v) for k, v in item["quotas"].items()}
        except (ValueError, TypeError, KeyError, AttributeError, OSError) as exc:
            # A damaged file loses the quotas, never the broker: clients run unthrottled, said once.
            self.entries = {}
            log.warning("client_quotas_unreadable", path=str(path), reason=str(exc),
                        hint="the client quotas in this file are lost; set them again")

    def save(self, entries: Mapping[Entity, Mapping[str, float]]) -> None:
        """Replace every stored quota; raises OSError when the disk refuses."""
        doc = [{"entity": [list(p) for p in e], "quotas": dict(q)} for e, q in sorted(entries.items(), key=repr) if q]
        files.atomic_write(self.path, json.dumps(doc, indent=1).encode())
        self.entries = {e: dict(q) for e, q in entries.items() if q}
