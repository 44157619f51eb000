"""The check every direct response writer (minikafka/protocol/*_response.py) must pass: the same
bytes as downgrading the canonical answer and encoding it with kio, through the writer itself and
through codec.encode_answer, the door dispatch uses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minikafka.protocol import codec, versions


def generic(api_key: int, version: int, correlation_id: int, response: Any) -> bytes:
    return codec.encode_response(api_key, version, correlation_id, versions.downgrade(response, version))


def assert_writes_like_kio(api_key: int, writer: Callable[[int, int, Any], bytes | None], version: int,
                           correlation_id: int, response: Any) -> None:
    expected = generic(api_key, version, correlation_id, response)
    assert writer(version, correlation_id, response) == expected
    assert codec.encode_answer(api_key, version, correlation_id, response) == expected
