"""Request and response bytes <-> kio entities. The only module that uses kio's serializers.

Request header: v2 (flexible, tagged fields) for flexible API versions, else v1. Response
header: v1 for flexible versions, else v0; ApiVersions always answers with header v0 (KIP-511),
because a client cannot know the broker's flexible versions before it has the answer.
"""

from __future__ import annotations

import functools
import io
import struct
from collections.abc import Callable
from types import NoneType, UnionType
from typing import Any, NamedTuple, Union, get_args, get_origin

from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer

from minikafka.protocol import produce_request, records, versions
from minikafka.protocol.errors import FramingError, UnsupportedVersion
from minikafka.protocol.fetch_response import encode_fetch_response
from minikafka.protocol.metadata_response import encode_metadata_response
from minikafka.protocol.produce_response import encode_produce_response
from minikafka.protocol.txn_responses import encode_add_partitions_to_txn_response, encode_end_txn_response
from minikafka.protocol.wire_write import Gathered

API_VERSIONS_KEY = 18
# Answers written without kio, byte for byte what kio writes (each module's test checks it):
# api key -> (version, correlation id, canonical answer) -> the frame, or None for kio to write it.
DIRECT_WRITERS: dict[int, Callable[[int, int, Any], bytes | Gathered | None]] = {
    0: encode_produce_response,
    1: encode_fetch_response,
    3: encode_metadata_response,
    24: encode_add_partitions_to_txn_response,
    26: encode_end_txn_response,
}

_PREFIX = struct.Struct(">hhi")
_SIZE_CORR = struct.Struct(">ii")
_CLIENT_ID_AT = _PREFIX.size + 2  # where a request header's client id string starts


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
        flexible = bool(cls.__flexible__)
        # The header is read here rather than by kio: api key, version and correlation id are
        # already known, and the walk gives the client id's extent and the body's start.
        body = None
        try:
            used = _header_walk(frame, flexible)
            fast = _fast_reader(api_key, api_version)
            if fast is not None:  # a compiled reader for the usual request (None: kio decides)
                body = fast(frame, used)
            if body is None:
                if type(frame) is not bytes:  # a large frame is the decoder's bytearray; kio reads bytes
                    frame = bytes(frame)
                # Before kio, which preallocates arrays by their length (see _bounds_checker).
                _check_bounds(cls, frame, used)
        except UnknownTaggedField:
            # A newer client may send tagged fields this version does not define; Kafka skips them,
            # kio refuses them: decode a copy of the frame without them.
            frame = _without_unknown_tags(frame, cls)
            used = _header_walk(frame, flexible)
        (n,) = _I16.unpack_from(frame, _PREFIX.size)
        client_id = None if n < 0 else frame[_PREFIX.size + 2:_PREFIX.size + 2 + n].decode()
        if body is None:
            body, _used = _reader(cls)(frame, used)
    except FramingError:
        raise
    except Exception as exc:  # kio raises assorted errors on malformed input
        raise FramingError(f"cannot decode api_key={api_key} v{api_version}: {exc!r}") from exc
    # Bytes after the body are ignored, as Kafka's RequestContext.parseRequest ignores them
    # (librdkafka 2.16 sends three extra bytes after a Metadata v12 body).
    return DecodedRequest(api_key, api_version, correlation_id, client_id, body)


@functools.cache
def _fast_reader(api_key: int, api_version: int) -> Callable[[bytes, int], Any] | None:
    """The compiled body reader of this request version, if there is one (Produce v3-v12)."""
    return produce_request.reader(api_version) if api_key == produce_request.API_KEY else None


def peek_client_id(frame: bytes) -> str | None:
    """The client id of a request header (v1+: after api key, version and correlation id), or None
    when it is absent or unreadable; for log lines about requests that are not decoded."""
    try:
        (n,) = _I16.unpack_from(frame, _PREFIX.size)
        if n < 0:
            return None
        raw = frame[_PREFIX.size + 2:_PREFIX.size + 2 + n]
        return raw.decode("utf-8", errors="replace") if len(raw) == n else None
    except Exception:  # noqa: BLE001 - a short frame: nothing to say
        return None


# ---------------------------------------------------------------------------------------------
# Length checks before decoding (KAFKA-14063). kio's native readers allocate an array's storage
# from its declared length before reading any element, so a length of 2**32-2 aborts the whole
# process on a failed allocation. This walk reads only lengths and sizes, and refuses any array
# longer than the bytes left (Kafka's rule) or any string, bytes or tagged field past the end.
#
# The same walk, given an `out` buffer, copies the structure into it without the tagged fields the
# schema does not know (the slow path for the rare request that has some). Every walker is
# (buf, pos, out=None) -> end position.


class UnknownTaggedField(Exception):
    """A tagged field the request's schema does not define (raised by the checking walk only)."""


_FIXED_SIZE = {
    "bool": 1, "int8": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4, "uint32": 4,
    "timedelta_i32": 4, "int64": 8, "uint64": 8, "float64": 8, "datetime_i64": 8,
    "timedelta_i64": 8, "uuid": 16,
}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    for shift in range(0, 35, 7):
        if pos >= len(buf):
            raise FramingError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
    raise FramingError("varint longer than 5 bytes")


def _length(buf: bytes, pos: int, flexible: bool, wide: bool) -> tuple[int, int]:
    """A length prefix: -1 for null. Compact: uvarint n+1; legacy: int16 (strings) or int32."""
    if flexible:
        n, pos = _uvarint(buf, pos)
        return n - 1, pos
    st = _I32 if wide else _I16
    if pos + st.size > len(buf):
        raise FramingError("truncated length")
    return st.unpack_from(buf, pos)[0], pos + st.size


def _skip(buf: bytes, pos: int, n: int) -> int:
    if n < -1 or pos + max(n, 0) > len(buf):
        raise FramingError(f"length {n} at {pos} exceeds the {len(buf) - pos} bytes left")
    return pos + max(n, 0)


def _nullable(annotation: Any) -> bool:
    return get_origin(annotation) in (UnionType, Union) and NoneType in get_args(annotation)


class _Shape(NamedTuple):
    """What the walks need to know of one field of a request schema."""

    kafka_type: str | None
    entity: type[Any] | None  # a nested struct's class
    is_array: bool
    nullable: bool
    element_nullable: bool  # of an array's elements; else the same as nullable


def _shape(f: Any) -> _Shape:
    from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField, classify_field

    kind = classify_field(f)
    entity = kind.type_ if isinstance(kind, EntityField | EntityTupleField) else None
    is_array = isinstance(kind, EntityTupleField | PrimitiveTupleField)
    nullable = _nullable(f.type)
    if is_array:  # the elements' own type: tuple[str | None, ...] | None
        inner = next((a for a in get_args(f.type) if get_origin(a) is tuple), f.type)
        element_nullable = bool(get_args(inner)) and _nullable(get_args(inner)[0])
    else:
        element_nullable = nullable
    return _Shape(f.metadata.get("kafka_type"), entity, is_array, nullable, element_nullable)


# One compile step serves both walks: each request class becomes a spec of nested tuples, which
# the C walk (_walk.bounds_walk, issue 17: ~0.3 us where the Python walk took 4.6 us for a small
# Produce) reads, and which _field_walker below turns into the Python reference walk. The Python
# walk names faults (the C walk only says there is one), copies requests without unknown tagged
# fields, and runs alone where no compiler was present at install time.
#   struct: (flexible, (field, ...), {tag: field})
#   field:  (0, size, name)               a fixed-size value
#           (1, nullable, wide, name)     string (int16 length) or bytes/records (wide: int32)
#           (2, nullable, struct, name)   a nested struct (nullable: an int8 marker first)
#           (3, nullable, item, name)     an array of item fields
# The C walk reads the leading items by position; the trailing name is for the Python walk's errors.
try:
    from minikafka.protocol._walk import bounds_walk as _bounds_walk_c
except ImportError:  # no compiler at install time: the Python walk alone
    _bounds_walk_c = None


def _value_spec(kafka_type: str | None, entity: type[Any] | None, nullable: bool, name: str) -> tuple[Any, ...]:
    if entity is not None:
        return (2, nullable, _bounds_spec(entity), name)
    assert kafka_type is not None
    size = _FIXED_SIZE.get(kafka_type)
    if size is not None:
        return (0, size, name)
    if kafka_type not in ("string", "bytes", "records"):
        raise TypeError(f"unknown kafka_type {kafka_type}")
    return (1, nullable, kafka_type in ("bytes", "records"), name)


@functools.cache
def _bounds_spec(cls: type[Any]) -> tuple[Any, ...]:
    import dataclasses

    flexible = bool(cls.__flexible__)
    inline = []
    tagged: dict[int, tuple[Any, ...]] = {}
    for f in dataclasses.fields(cls):
        shape = _shape(f)
        item = _value_spec(shape.kafka_type, shape.entity, shape.element_nullable, f.name)
        spec = (3, shape.nullable, item, f.name) if shape.is_array else item
        tag = f.metadata.get("tag")
        if tag is not None and flexible:
            tagged[int(tag)] = spec
        else:
            inline.append(spec)
    return (flexible, tuple(inline), tagged)


def _field_walker(field: tuple[Any, ...], flexible: bool) -> Any:
    """The Python walk of one field spec: (buf, pos, out=None) -> end position."""
    kind, name = field[0], field[-1]
    if kind == 0:
        size = field[1]

        def fixed(buf: bytes, pos: int, out: bytearray | None = None) -> int:
            end = _skip(buf, pos, size)
            if out is not None:
                out += buf[pos:end]
            return end

        return fixed
    nullable = field[1]
    if kind == 1:
        wide = field[2]

        def value(buf: bytes, pos: int, out: bytearray | None = None) -> int:
            n, start = _length(buf, pos, flexible, wide)
            if n == -1 and not nullable:  # Kafka's generated readers refuse it the same way
                raise FramingError(f"non-nullable field {name} was serialized as null")
            end = _skip(buf, start, n)
            if out is not None:
                out += buf[pos:end]
            return end

        return value
    if kind == 2:
        walk = _struct_walker(field[2])
        if not nullable:
            return walk

        def nullable_struct(buf: bytes, pos: int, out: bytearray | None = None) -> int:
            # A nullable struct (DescribeTopicPartitions' cursor) is an int8 marker first: -1 null, 1 present.
            end = _skip(buf, pos, 1)
            marker = buf[pos]
            if marker not in (0x01, 0xFF):
                raise FramingError(f"nullable field {name} has marker {marker}")
            if out is not None:
                out += buf[pos:end]
            return end if marker == 0xFF else walk(buf, end, out)

        return nullable_struct
    assert kind == 3, field
    item = _field_walker(field[2], flexible)

    def array(buf: bytes, pos: int, out: bytearray | None = None) -> int:
        n, start = _length(buf, pos, flexible, True)
        if n < -1 or n > len(buf) - start:
            raise FramingError(f"array of {n} elements with {len(buf) - start} bytes left")
        if n == -1 and not nullable:
            raise FramingError(f"non-nullable field {name} was serialized as null")
        if out is not None:
            out += buf[pos:start]
        pos = start
        for _ in range(n):
            pos = item(buf, pos, out)
        return pos

    return array


def _struct_walker(spec: tuple[Any, ...]) -> Any:
    flexible, fields, tagged_specs = spec
    inline = [_field_walker(field, flexible) for field in fields]
    tagged = {tag: _field_walker(field, flexible) for tag, field in tagged_specs.items()}

    def walk(buf: bytes, pos: int, out: bytearray | None = None) -> int:
        for w in inline:
            pos = w(buf, pos, out)
        if flexible:
            count, pos = _uvarint(buf, pos)
            if count > len(buf) - pos:
                raise FramingError(f"{count} tagged fields with {len(buf) - pos} bytes left")
            kept: list[tuple[int, bytearray | None]] = []
            for _ in range(count):
                tag, pos = _uvarint(buf, pos)
                size, pos = _uvarint(buf, pos)
                end = _skip(buf, pos, size)
                known = tagged.get(tag)
                if known is None:
                    if out is None:
                        raise UnknownTaggedField(tag)
                else:
                    sub = None if out is None else bytearray()
                    if known(memoryview(buf)[:end], pos, sub) > end:  # bounds the field; no copy
                        raise FramingError(f"tagged field {tag} overruns its size")
                    kept.append((tag, sub))
                pos = end
            if out is not None:
                out += records.uvarint(len(kept))
                for tag, sub in kept:
                    assert sub is not None
                    out += records.uvarint(tag) + records.uvarint(len(sub)) + sub
        return pos

    return walk


@functools.cache
def _bounds_checker(cls: type[Any]) -> Any:
    """A function (frame, pos, out=None) -> end position that raises FramingError on an
    impossible length: the Python walk of _bounds_spec(cls)."""
    return _struct_walker(_bounds_spec(cls))


def _check_bounds(cls: type[Any], frame: bytes, pos: int) -> None:
    """Raise FramingError for an impossible length in the request body at pos, UnknownTaggedField
    for a tagged field its schema does not define."""
    if _bounds_walk_c is None:
        _bounds_checker(cls)(frame, pos)
        return
    end = _bounds_walk_c(_bounds_spec(cls), frame, pos)
    if end == -2:
        raise UnknownTaggedField(-1)
    if end < 0:
        _bounds_checker(cls)(frame, pos)  # names the fault
        raise FramingError(f"{cls.__name__}: a length past the end of the request")


def _header_walk(frame: bytes, flexible: bool) -> int:
    """End of the request header. Header v2 keeps client_id as a legacy int16 string and defines
    no tagged fields, so every tagged field there is unknown."""
    end = usual_header_end(frame, flexible)
    return _header_walk_full(frame, flexible) if end is None else end


def usual_header_end(frame: bytes, flexible: bool) -> int | None:
    """End of the header of nearly every request: a client id that fits and, flexible, an empty
    tagged-field section (one zero byte); None for anything else, which _header_walk_full walks
    and names the fault of. Both give the same end for the same bytes (issue 17: 1.5 us per
    request). broker/usual_produce.py reads its Produce headers with this too."""
    if len(frame) >= _CLIENT_ID_AT:
        (n,) = _I16.unpack_from(frame, _PREFIX.size)
        pos = _CLIENT_ID_AT + n if n > 0 else _CLIENT_ID_AT
        if n >= -1 and pos <= len(frame):
            if not flexible:
                return pos
            if pos < len(frame) and frame[pos] == 0:
                return pos + 1
    return None


def _header_walk_full(frame: bytes, flexible: bool, out: bytearray | None = None) -> int:
    """_header_walk for any header: each length checked, tagged fields walked (or copied to out)."""
    n, pos = _length(frame, _PREFIX.size, False, False)
    pos = _skip(frame, pos, n)
    if out is not None:
        out += frame[:pos]
    if flexible:
        count, pos = _uvarint(frame, pos)
        if count > len(frame) - pos:
            raise FramingError(f"{count} tagged fields with {len(frame) - pos} bytes left")
        for _ in range(count):
            _tag, pos = _uvarint(frame, pos)
            size, pos = _uvarint(frame, pos)
            pos = _skip(frame, pos, size)
        if count and out is None:
            raise UnknownTaggedField(-1)
        if out is not None:
            out += b"\0"
    return pos


def _without_unknown_tags(frame: bytes, cls: type[Any]) -> bytes:
    """The request frame with every tagged field its schema does not define left out."""
    out = bytearray()
    end = _bounds_checker(cls)(frame, _header_walk_full(frame, bool(cls.__flexible__), out), out)
    out += frame[end:]
    return bytes(out)


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


def encode_answer(api_key: int, api_version: int, correlation_id: int, canonical: Any) -> bytes | Gathered:
    """Size prefix + response header + body of a handler's answer (the canonical version's
    shape) in api_version: downgraded and written by kio, or by an API's own writer where one
    exists and takes it (DIRECT_WRITERS). A large Fetch answer comes as its parts (Gathered)."""
    direct = DIRECT_WRITERS.get(api_key)
    if direct is not None:
        data = direct(api_version, correlation_id, canonical)
        if data is not None:
            return data
    return encode_response(api_key, api_version, correlation_id, versions.downgrade(canonical, api_version))


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
