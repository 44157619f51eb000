"""SCRAM credentials kept in the data dir, one JSON file rewritten atomically on each change and
readable by its owner only (Kafka keeps them as UserScramCredentialRecords in its metadata log):
`[{"user": name, "mechanism": type, "iterations": n, "salt": b64, "stored_key": b64,
"server_key": b64}, ...]`. The store knows nothing of SCRAM: a credential is four plain fields."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import structlog

from minikafka.storage import files

log = structlog.get_logger("minikafka.storage")

SCRAM_CREDENTIALS_FILE = "minikafka-scram-credentials.json"


class StoredCredential(NamedTuple):
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


Key = tuple[str, int]  # (user name, mechanism type)


class ScramCredentialStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[Key, StoredCredential] = {}
        if not path.exists():
            return
        try:
            for item in json.loads(path.read_text(encoding="utf-8")):
                self.entries[(str(item["user"]), int(item["mechanism"]))] = StoredCredential(
                    salt=base64.b64decode(item["salt"], validate=True),
                    stored_key=base64.b64decode(item["stored_key"], validate=True),
                    server_key=base64.b64decode(item["server_key"], validate=True),
                    iterations=int(item["iterations"]))
        except (ValueError, TypeError, KeyError, AttributeError, OSError) as exc:
            # A damaged file loses the credentials, never the broker: said once, loudly.
            self.entries = {}
            log.warning("scram_credentials_unreadable", path=str(path), reason=str(exc),
                        hint="the SCRAM credentials in this file are lost; set them again")

    def save(self, entries: Mapping[Key, StoredCredential]) -> None:
        """Replace every stored credential; raises OSError when the disk refuses."""
        doc = [{"user": user, "mechanism": mechanism, "iterations": c.iterations,
                "salt": base64.b64encode(c.salt).decode(), "stored_key": base64.b64encode(c.stored_key).decode(),
                "server_key": base64.b64encode(c.server_key).decode()}
               for (user, mechanism), c in sorted(entries.items())]
        files.atomic_write(self.path, json.dumps(doc, indent=1).encode(), mode=0o600)
        self.entries = dict(entries)
