"""The ACLs of the broker, kept in the data dir (`minikafka-acls.json`) so they survive restarts:
written whole to a temporary file, fsynced, renamed over the old one (a crash leaves the old or
the new set, never half of one). Kafka keeps them as records in its metadata log."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from minikafka.security.acls import AclBinding

ACLS_FILE = "minikafka-acls.json"


class AclStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / ACLS_FILE

    def load(self) -> list[AclBinding]:
        try:
            rows = json.loads(self.path.read_text())["acls"]
        except FileNotFoundError:
            return []
        return [AclBinding.from_json(r) for r in rows]

    def save(self, acls: Iterable[AclBinding]) -> None:
        tmp = self.path.with_suffix(".tmp")
        data = json.dumps({"version": 1, "acls": [a.to_json() for a in acls]}, indent=1)
        with open(tmp, "w") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
