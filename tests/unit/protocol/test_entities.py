"""protocol/entities.py: entities built by filling their slots are the entities __init__ builds."""

from __future__ import annotations

import dataclasses
import datetime

import pytest

from minikafka.protocol import entities, messages, versions
from minikafka.protocol.errors import ErrorCode

pytestmark = pytest.mark.unit

PARTITION_FIELDS = ("index", "error_code", "base_offset", "log_append_time", "log_start_offset", "record_errors",
                    "error_message", "current_leader")
LEADER = versions.nested_class(messages.PartitionProduceResponse, "current_leader")


def _partition_values() -> list[tuple]:
    when = datetime.datetime(2026, 11, 29, tzinfo=datetime.UTC)
    error = messages.BatchIndexAndErrorMessage(batch_index=2, batch_index_error_message="bad")
    return [
        (0, ErrorCode.none, 5, None, 0, (), None, LEADER(leader_id=-1, leader_epoch=-1)),
        (7, ErrorCode.invalid_record, -1, when, 12, (error,), "why", LEADER(leader_id=1, leader_epoch=4)),
    ]


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("values", _partition_values())
def test_a_built_entity_is_the_one_init_builds(compiled: bool, values: tuple) -> None:
    build = entities.builder(messages.PartitionProduceResponse, PARTITION_FIELDS, compiled=compiled)
    built = build(*values)
    made = messages.PartitionProduceResponse(**dict(zip(PARTITION_FIELDS, values)))
    assert type(built) is type(made) and built == made and hash(built) == hash(made)
    assert repr(built) == repr(made)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.index = 1  # still frozen


@pytest.mark.parametrize("compiled", [True, False])
def test_nested_answers_encode_as_init_built_ones(compiled: bool) -> None:
    from minikafka.protocol.produce_response import encode_produce_response

    partition = entities.builder(messages.PartitionProduceResponse, PARTITION_FIELDS, compiled=compiled)
    topic = entities.builder(messages.TopicProduceResponse, ("name", "partition_responses"), compiled=compiled)
    answer = entities.builder(messages.ProduceResponse, ("responses", "throttle_time", "node_endpoints"),
                              compiled=compiled)
    values = _partition_values()[0]
    built = answer((topic("t", (partition(*values),)),), datetime.timedelta(0), ())
    made = messages.ProduceResponse(
        responses=(messages.TopicProduceResponse(name="t", partition_responses=(
            messages.PartitionProduceResponse(**dict(zip(PARTITION_FIELDS, values))),)),),
        throttle_time=datetime.timedelta(0))
    assert built == made
    for version in (3, 9, 12):
        assert encode_produce_response(version, 1, built) == encode_produce_response(version, 1, made)


@pytest.mark.parametrize("compiled", [True, False])
def test_every_field_must_be_given(compiled: bool) -> None:
    build = entities.builder(messages.TopicProduceResponse, ("name", "partition_responses"), compiled=compiled)
    with pytest.raises(TypeError):
        build("t")
    with pytest.raises(TypeError):
        build("t", (), "extra")


def test_the_named_fields_must_be_the_class_fields_in_order() -> None:
    with pytest.raises(TypeError, match="has the fields"):
        entities.builder(messages.TopicProduceResponse, ("partition_responses", "name"))


def test_a_class_without_slots_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Plain:
        a: int

    with pytest.raises(TypeError, match="not a slot"):
        entities.builder(Plain, ("a",))
