"""Request and response bytes <-> kio entities. The only module that uses kio's serializers.

Request header: v2 (flexible, tagged fields) for flexible API versions, else v1. Response
header: v1 for flexible versions, else v0; ApiVersions always answers with header v0 (KIP-511),
because a client cannot know the broker's flexible versions before it has the answer.
"""

from __future__ import annotations

import functools
import io
import struct
from typing import Any, NamedTuple

from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer

from minikafka.protocol import versions
from minikafka.protocol.errors import FramingError, UnsupportedVersion

API_VERSIONS_KEY = 18
_PREFIX = struct.Struct(">hhi")
_SIZE_CORR = struct.Struct(">ii")


class DecodedRequest(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any  # the kio request entity of api_version


def peek_header(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) without decoding anything else."""
    if len(frame) < _PREFIX.size:
        raise FramingError("frame shorter than a request header")
    return _PREFIX.unpack_from(frame, 0)  # type: ignore[return-value]


@functools.cache
def _reader(cls: type[Any]) -> Any:
    return entity_reader(cls)


@functools.cache
def _writer(cls: type[Any]) -> Any:
    return entity_writer(cls)


def decode_request(frame: bytes, served: dict[int, versions.VersionRange]) -> DecodedRequest:
    """Decode one request frame (without its size prefix).

    Raises UnsupportedVersion for an API key or version not in `served`, FramingError for any
    header or body that does not decode exactly.
    """
    api_key, api_version, correlation_id = peek_header(frame)
    rng = served.get(api_key)
    if rng is None or api_version not in rng:
        raise UnsupportedVersion(api_key, api_version, correlation_id)
    try:
        cls = versions.request_class(api_key, api_version)
        header_cls = RequestHeaderV2 if cls.__flexible__ else RequestHeaderV1
        header, used = _reader(header_cls)(frame, 0)
        body, used2 = _reader(cls)(frame, used)
    except Exception as exc:  # kio raises assorted errors on malformed input
        raise FramingError(f"cannot decode api_key={api_key} v{api_version}: {exc!r}") from exc
    # Bytes after the body are ignored, as Kafka's RequestContext.parseRequest ignores them
    # (librdkafka 2.16 sends three extra bytes after a Metadata v12 body).
    return DecodedRequest(api_key, api_version, correlation_id, header.client_id, body)


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Any) -> bytes:
    """Size prefix + response header + body, for a body already in api_version's shape."""
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    buf.write(struct.pack(">i", correlation_id))
    if body.__flexible__ and api_key != API_VERSIONS_KEY:
        buf.write(b"\0")  # empty tagged fields of response header v1
    _writer(type(body))(buf, body)
    data = buf.getbuffer()
    struct.pack_into(">i", data, 0, len(data) - 4)
    return bytes(data)


def encode_request(api_version: int, correlation_id: int, client_id: str | None, body: Any) -> bytes:
    """Used by tests and tools (raw-protocol clients)."""
    cls = type(body)
    header_cls = RequestHeaderV2 if cls.__flexible__ else RequestHeaderV1
    header = header_cls(
        request_api_key=cls.__api_key__, request_api_version=api_version,
        correlation_id=correlation_id, client_id=client_id,
    )
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    _writer(header_cls)(buf, header)
    _writer(cls)(buf, body)
    data = buf.getbuffer()
    struct.pack_into(">i", data, 0, len(data) - 4)
    return bytes(data)


def decode_response(api_key: int, api_version: int, frame: bytes) -> tuple[int, Any]:
    """(correlation_id, body) of a response frame without its size prefix. For tests and tools."""
    cls = versions.response_class(api_key, api_version)
    (correlation_id,) = struct.unpack_from(">i", frame, 0)
    pos = 4
    if cls.__flexible__ and api_key != API_VERSIONS_KEY:
        pos += 1  # tagged fields (always empty from minikafka and Kafka)
    body, _ = _reader(cls)(frame, pos)
    return correlation_id, body
