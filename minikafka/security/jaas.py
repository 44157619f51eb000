"""One JAAS login-module entry as Kafka's `sasl.jaas.config` holds it (pure):
`<LoginModule class> <flag> key="value" key2=value2 ;`."""

from __future__ import annotations

import re

_OPTION = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*(?:"((?:\\.|[^"\\])*)"|([^\s;"]+))')


def parse_jaas_options(jaas: str) -> dict[str, str]:
    """The options of one JAAS login module entry: `<LoginModule class> required k="v" ... ;`."""
    text = jaas.strip()
    parts = text.split(None, 2)
    if len(parts) < 2 or parts[1] not in ("required", "requisite", "sufficient", "optional"):
        raise ValueError("Login module control flag not specified in JAAS config")
    if not text.endswith(";"):
        raise ValueError("Expected ';' at the end of the JAAS config")
    rest = parts[2] if len(parts) > 2 else ""
    return {m.group(1): (m.group(2).replace('\\"', '"') if m.group(2) is not None else m.group(3))
            for m in _OPTION.finditer(rest.rstrip(";"))}
