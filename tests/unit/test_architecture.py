"""The dependency direction of style.md, enforced by reading every module's imports (AST).

broker -> coordinator | storage -> protocol; coordinator and storage never import each other;
only minikafka.protocol touches kio's serializers; the pure cores import no asyncio.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2] / "minikafka"


def _modules() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module)
                imported.update(f"{node.module}.{a.name}" for a in node.names)
        out[name] = imported
    return out


MODULES = _modules()


def _violations(source_prefix: str, forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for mod, imports in MODULES.items():
        if mod == source_prefix or mod.startswith(source_prefix + "."):
            for imp in imports:
                if any(imp == f or imp.startswith(f + ".") for f in forbidden):
                    bad.append(f"{mod} imports {imp}")
    return sorted(bad)


def test_protocol_imports_nothing_else_from_minikafka():
    allowed = ("minikafka.protocol",)
    bad = [f"{m} imports {i}" for m, imps in MODULES.items() if m.startswith("minikafka.protocol")
           for i in imps if i.startswith("minikafka") and not i.startswith(allowed)]
    assert bad == []


def test_storage_depends_only_on_protocol_records_errors_types():
    assert _violations("minikafka.storage", ("minikafka.broker", "minikafka.coordinator",
                                             "minikafka.protocol.codec", "minikafka.protocol.messages",
                                             "minikafka.protocol.versions")) == []


def test_coordinator_does_not_import_storage_or_broker():
    assert _violations("minikafka.coordinator", ("minikafka.storage", "minikafka.broker")) == []


def test_group_and_transaction_coordinators_are_independent():
    assert _violations("minikafka.coordinator.group", ("minikafka.coordinator.transaction",)) == []
    assert _violations("minikafka.coordinator.transaction", ("minikafka.coordinator.group",)) == []


def test_only_protocol_uses_kio_serializers():
    bad = [f"{m} imports {i}" for m, imps in MODULES.items() if not m.startswith("minikafka.protocol")
           for i in imps if i.startswith(("kio.serial", "kio.index"))]
    assert bad == []


def test_the_eos_checker_is_a_client_of_the_protocol_only():
    """minikafka/eos_check reads topics over the wire like any client: no broker, storage or
    coordinator code (so it checks Apache Kafka's topics the same way)."""
    assert _violations("minikafka.eos_check", ("minikafka.broker", "minikafka.storage", "minikafka.coordinator",
                                               "minikafka.control")) == []


def test_control_never_imports_the_broker():
    """style.md: the control room (fault rules) is imported by the broker, never the other way."""
    assert _violations("minikafka.control", ("minikafka.broker", "minikafka.storage", "minikafka.coordinator")) == []


def test_security_never_imports_the_broker():
    """style.md: the security room is imported by the broker (the server, the connection and two
    handlers), never the other way; it knows nothing of storage or the coordinators either."""
    assert _violations("minikafka.security", ("minikafka.broker", "minikafka.storage", "minikafka.coordinator")) == []


def test_observe_reads_the_broker_through_its_door_only():
    """style.md: the observe room (metrics, console) sees the broker only through observe/ports.py,
    implemented by broker/observation.py; it imports no broker, storage or coordinator code."""
    assert _violations("minikafka.observe", ("minikafka.broker", "minikafka.storage", "minikafka.coordinator",
                                             "minikafka.security", "minikafka.control")) == []


def test_the_hot_paths_know_only_the_meters():
    """Produce, Fetch, the connection loop and the server add to observe/meters.py's counters and
    know nothing else of the room."""
    for mod in ("minikafka.broker.handlers.produce", "minikafka.broker.handlers.fetch",
                "minikafka.broker.connection", "minikafka.broker.server", "minikafka.broker.services"):
        observed = {i.rsplit(".", 1)[0] if i.endswith(".Meters") else i
                    for i in MODULES[mod] if i.startswith("minikafka.observe")}
        assert observed <= {"minikafka.observe.meters"}, mod


def test_a_broker_without_endpoints_imports_no_http_stack():
    """aiohttp, Jinja and prometheus_client are imported only when an endpoint is switched on
    (they would cost start-up time for nothing)."""
    code = ("import sys; import minikafka.broker.app, minikafka.__main__; "
            "print(sorted(m for m in ('aiohttp', 'jinja2', 'prometheus_client') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT.parent).stdout.strip()
    assert out == "[]"


@pytest.mark.parametrize("pure", [
    "minikafka.protocol", "minikafka.storage", "minikafka.control",
    "minikafka.security.listeners", "minikafka.security.principal", "minikafka.security.sasl",
    "minikafka.security.session",
    "minikafka.eos_check.history", "minikafka.eos_check.verdict",
    "minikafka.coordinator.transaction.state", "minikafka.coordinator.transaction.decisions",
    "minikafka.coordinator.group.state", "minikafka.coordinator.group.decisions",
    "minikafka.observe.meters", "minikafka.observe.model",
])
def test_pure_cores_stay_pure(pure):
    assert _violations(pure, ("asyncio", "uvloop", "socket")) == []


def test_every_module_was_read():
    assert "minikafka.broker.app" in MODULES and "minikafka.storage.partition_log" in MODULES
    assert "minikafka.control.rules" in MODULES and "minikafka.security.session" in MODULES
