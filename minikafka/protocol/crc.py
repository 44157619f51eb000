"""CRC-32C (Castagnoli), the checksum of record batches and producer-state snapshots, from the
`crc32c` package's compiled extension.

The extension is loaded without running the package's __init__, which reads the installed
version through importlib.metadata and imports its command line: 12 ms of the broker's start-up
(issue 17) for nothing the broker uses. Should the package ever be laid out differently, the
plain import is the fallback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _load() -> Callable[..., int]:
    try:
        import importlib.machinery
        import importlib.util
        import os

        spec = importlib.util.find_spec("crc32c")  # locates the package without importing it
        if spec is not None and spec.submodule_search_locations:
            for where in spec.submodule_search_locations:
                for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                    path = os.path.join(where, "_crc32c" + suffix)
                    if os.path.exists(path):
                        loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                        ext_spec = importlib.util.spec_from_file_location("crc32c._crc32c", path, loader=loader)
                        assert ext_spec is not None
                        module: Any = importlib.util.module_from_spec(ext_spec)
                        loader.exec_module(module)
                        return module.crc32c  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - any surprise: the package's own import below
        pass
    import crc32c as package

    return package.crc32c  # type: ignore[no-any-return]


crc32c = _load()
