"""SCRAM credentials kept in the data dir, one JSON file rewritten atomically on each change and
readable by its owner only (Kafka keeps them as UserScramCredentialRecords in its metadata log):
`[{"user": name, "mechanism": type, "iterations": n, "salt": b64, "stored_key": b64,
"server_key": b64}, ...]`. The store knows nothing of SCRAM: a credential is four plain fields,
(salt, stored key, server key, iterations), in that order (scram.credentials.ScramCredential)."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path

import structlog

from minikafka.storage import files

log = structlog.get_logger("minikafka.storage")

SCRAM_CREDENTIALS_FILE = "minikafka-scram-credentials.json"


Key = tuple[str, int]  # (user name, mechanism type)
Stored = tuple[bytes, bytes, bytes, int]  # (salt, stored key, server key, iterations)


class ScramCredentialStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[Key, Stored] = {}
        if not path.exists():
            return
        try:
            for item in json.loads(path.read_text(encoding="utf-8")):
                self.entries[(str(item["user"]), int(item["mechanism"]))] = (
                    base64.b64decode(item["salt"], validate=True),
                    base64.b64decode(item["stored_key"], validate=True),
                    base64.b64decode(item["server_key"], validate=True),
                    int(item["iterations"]))
        except (ValueError, TypeError, KeyError, AttributeError, OSError) as exc:
            # A damaged file loses the credentials, never the broker: said once, loudly.
            self.entries = {}
            log.warning("scram_credentials_unreadable", path=str(path), reason=str(exc),
                        hint="the SCRAM credentials in this file are lost; set them again")

    def save(self, entries: Mapping[Key, Stored]) -> None:
        """Replace every stored credential; raises OSError when the disk refuses."""
        b64 = base64.b64encode
        doc = [{"user": user, "mechanism": mechanism, "iterations": iterations, "salt": b64(salt).decode(),
                "stored_key": b64(stored).decode(), "server_key": b64(server).decode()}
               for (user, mechanism), (salt, stored, server, iterations) in sorted(entries.items())]
        files.atomic_write(self.path, json.dumps(doc, indent=1).encode(), mode=0o600)
        self.entries = {k: tuple(c) for k, c in entries.items()}  # type: ignore[misc]
