"""File-backed ProducerIdBlockStore: `<data_dir>/minikafka-producer-ids` holds the next block start.

Kafka keeps producer id blocks in its KRaft metadata log (ProducerIdsRecord); one node keeps the
same single number in a small file, replaced atomically and fsynced before any id of a new block
is handed out.
"""

from __future__ import annotations

from pathlib import Path

from minikafka.storage import files

FILE_NAME = "minikafka-producer-ids"


class FileProducerIdBlockStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME

    def load(self) -> int:
        try:
            text = self.path.read_text().strip()
        except FileNotFoundError:
            return 0
        fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        return int(fields["next.block.start"])

    def save(self, next_block_start: int) -> None:
        files.atomic_write(self.path, f"version=0\nnext.block.start={next_block_start}\n".encode())
