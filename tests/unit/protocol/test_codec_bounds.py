"""The compiled bounds walk (_walk.bounds_walk over codec._bounds_spec) gives the Python walk's
verdict (codec._bounds_checker) on every request of every API and version served: the same end
position, a refusal where Python refuses, an unknown tagged field where Python finds one. Requests
are encoded with arrays of two elements, strings and bytes filled (and nulls where the schema
allows them), then damaged by the protocol fuzzer's mutations."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

import fuzzing
from minikafka.protocol import codec, versions
from minikafka.protocol.errors import FramingError

pytestmark = [pytest.mark.unit,
              pytest.mark.skipif(codec._bounds_walk_c is None, reason="the _walk extension was not built")]


def _value(kafka_type: str | None) -> Any:
    import datetime
    import uuid

    from kio.schema.errors import ErrorCode

    return {
        "string": "ab", "bytes": b"xyz", "records": b"xyz", "uuid": uuid.UUID(int=7), "bool": True,
        "float64": 1.5, "error_code": ErrorCode.none,
        "timedelta_i32": datetime.timedelta(milliseconds=3), "timedelta_i64": datetime.timedelta(milliseconds=3),
        "datetime_i64": datetime.datetime.fromtimestamp(1, datetime.UTC),
    }.get(kafka_type or "", 1)


def _populated(cls: type[Any], nulls: bool, depth: int = 0) -> Any:
    """An instance of a kio entity with every array two elements long and every value set."""
    from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField, classify_field, is_optional

    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        kind = classify_field(f)
        if is_optional(f) and nulls:
            kwargs[f.name] = None
        elif isinstance(kind, EntityTupleField):
            kwargs[f.name] = () if depth > 3 else tuple(_populated(kind.type_, nulls, depth + 1) for _ in range(2))
        elif isinstance(kind, EntityField):
            kwargs[f.name] = _populated(kind.type_, nulls, depth + 1)
        elif isinstance(kind, PrimitiveTupleField):
            kwargs[f.name] = (_value(f.metadata.get("kafka_type")),) * 2
        else:
            kwargs[f.name] = _value(f.metadata.get("kafka_type"))
    return cls(**kwargs)


def _corpus() -> list[tuple[type[Any], bytes]]:
    out = []
    for key, rng in sorted(versions.SUPPORTED.items()):
        for v in range(rng.min, rng.max + 1):
            cls = versions.request_class(key, v)
            for nulls in (False, True):
                try:
                    body = _populated(cls, nulls)
                    out.append((cls, codec.encode_request(v, 0, "bounds", body)[4:]))
                except Exception:  # a schema this generator cannot fill: the mutations of the others cover it
                    continue
    return out


CORPUS = _corpus()


def _python(cls: type[Any], frame: bytes, pos: int) -> Any:
    try:
        return codec._bounds_checker(cls)(frame, pos)
    except FramingError:
        return -1
    except codec.UnknownTaggedField:
        return -2


def _compare(cls: type[Any], frame: bytes) -> None:
    try:
        pos = codec._header_walk(frame, bool(cls.__flexible__))
    except (FramingError, codec.UnknownTaggedField):
        return  # the header is the Python walk's alone
    assert codec._bounds_walk_c(codec._bounds_spec(cls), frame, pos) == _python(cls, frame, pos), \
        (cls.__name__, cls.__version__, frame.hex())


def test_the_corpus_covers_every_api() -> None:
    assert {cls.__api_key__ for cls, _ in CORPUS} == set(versions.SUPPORTED)
    assert len(CORPUS) > 400


def test_the_same_end_on_every_valid_request() -> None:
    for cls, frame in CORPUS:
        pos = codec._header_walk(frame, bool(cls.__flexible__))
        end = codec._bounds_walk_c(codec._bounds_spec(cls), frame, pos)
        assert end == len(frame) == _python(cls, frame, pos), (cls.__name__, cls.__version__)


@pytest.mark.parametrize("seed", range(4))
def test_the_same_verdict_on_damaged_requests(seed: int) -> None:
    rng = random.Random(seed)
    for cls, frame in CORPUS:
        for _ in range(25):
            _compare(cls, fuzzing.mutate(rng, frame, 8))
        for cut in range(8, len(frame), max(1, len(frame) // 16)):
            _compare(cls, frame[:cut])


def test_unknown_tags_and_impossible_lengths() -> None:
    metadata = versions.request_class(3, 12)
    frame = bytearray(codec.encode_request(12, 1, "c", _populated(metadata, False))[4:])
    assert frame[-1] == 0
    _compare(metadata, bytes(frame[:-1]) + b"\x01\x63\x01\x00")  # an undefined tag: -2 from both
    pos = codec._header_walk(bytes(frame), True)
    assert codec._bounds_walk_c(codec._bounds_spec(metadata), bytes(frame[:-1]) + b"\x01\x63\x01\x00", pos) == -2
    huge = bytes(frame[:pos]) + b"\xff\xff\xff\xff\x0f"  # an array of 2**32 - 2 topics
    assert codec._bounds_walk_c(codec._bounds_spec(metadata), huge, pos) == -1
    with pytest.raises(FramingError):
        codec.decode_request(huge, {3: versions.SUPPORTED[3]})


def _header_end(walk: Any, frame: bytes, flexible: bool) -> Any:
    try:
        return walk(frame, flexible)
    except FramingError:
        return "framing"
    except codec.UnknownTaggedField:
        return "tagged"


@pytest.mark.parametrize("seed", range(2))
def test_the_header_fast_path_ends_where_the_full_walk_does(seed: int) -> None:
    """_header_walk takes a shortcut for the usual header (a client id, no tagged fields); on every
    request of the corpus, damaged or cut short, it gives the full walk's end or its refusal."""
    rng = random.Random(seed)
    whole_headers = 0  # frames whose header both walks accept: the shortcut's own cases among them
    for cls, frame in CORPUS:
        flexible = bool(cls.__flexible__)
        damaged = [fuzzing.mutate(rng, frame, 8) for _ in range(10)]
        damaged += [frame[:cut] for cut in range(0, min(len(frame), 24))]
        damaged.append(frame[:8] + b"\xff\xfe" + frame[10:])  # a client id length of -2
        damaged.append(frame[:8] + b"\x7f\xff" + frame[10:])  # a client id past the end
        for f in [frame, *damaged]:
            full = _header_end(codec._header_walk_full, f, flexible)
            assert _header_end(codec._header_walk, f, flexible) == full, (cls.__name__, cls.__version__, f.hex())
            whole_headers += isinstance(full, int)
    assert whole_headers > len(CORPUS)
