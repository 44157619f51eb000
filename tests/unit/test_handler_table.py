"""The handler table names real modules and classes with the right API keys: handlers are
imported on their API's first request, so a typo there would otherwise surface only when a
client first asks for that API."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from minikafka.broker.handlers import HANDLERS, LazyHandler, default_handlers
from minikafka.protocol import versions

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("api_key", "module", "cls", "how"), HANDLERS, ids=[m for _, m, _, _ in HANDLERS])
def test_each_entry_names_its_handler(api_key: int, module: str, cls: str, how: str) -> None:
    handler_class = getattr(importlib.import_module(f"minikafka.broker.handlers.{module}"), cls)
    assert handler_class.api_key == api_key
    assert api_key in versions.SUPPORTED


def test_one_handler_per_key_and_every_supported_key_served() -> None:
    keys = [k for k, _, _, _ in HANDLERS]
    assert len(keys) == len(set(keys))
    assert set(keys) == set(versions.SUPPORTED)


def test_starting_imports_no_handler_module_but_the_marker_writer() -> None:
    """Importing the broker loads only write_txn_markers (the transaction coordinator writes
    markers through it from the start); every other handler module waits for its first request."""
    code = ("import sys, minikafka.broker.app; "
            "print(sorted(m for m in sys.modules if m.startswith('minikafka.broker.handlers.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "['minikafka.broker.handlers.write_txn_markers']"


def test_a_lazy_handler_loads_once_and_forwards() -> None:
    handler = next(h for h in default_handlers(None) if h.api_key == 46)  # type: ignore[arg-type]
    assert isinstance(handler, LazyHandler)
    loaded = handler.load()
    assert type(loaded).__name__ == "ListPartitionReassignmentsHandler"
    assert handler.load() is loaded
    assert handler.svc is None  # attributes come from the handler itself
