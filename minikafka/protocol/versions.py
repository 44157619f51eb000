"""What the broker serves per API key, and conversion between kio's per-version classes.

kio generates one frozen dataclass per API per version. Handlers see one shape per API: the
request is *upgraded* to the class of the highest version we serve, and the handler's response,
built in that same version's shape, is *downgraded* to the version the client asked for. Fields
absent in the source get their schema default; fields absent in the target are dropped.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import uuid
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from kio.index import load_request_schema, load_response_schema
from kio.serial._implicit_defaults import get_implicit_default
from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField, classify_field, is_optional


class VersionRange(NamedTuple):
    min: int
    max: int

    def __contains__(self, version: object) -> bool:  # type: ignore[override]
        return isinstance(version, int) and self.min <= version <= self.max


# Ranges from shared/reference/protocol.md section 3. The advertised set is this table
# intersected with the handlers actually registered (broker/dispatch.py).
SUPPORTED: Final[Mapping[int, VersionRange]] = MappingProxyType({
    0: VersionRange(3, 13),    # Produce; 12 is transactions v2 (implicit partition add), 13 names topics by id
    1: VersionRange(4, 18),    # Fetch; v13+ names topics by id only (see BY_NAME_UNTIL)
    2: VersionRange(1, 11),    # ListOffsets
    3: VersionRange(0, 13),    # Metadata; v13 (KIP-1102) adds a top-level error code
    8: VersionRange(2, 10),    # OffsetCommit; v10 names topics by id only (see BY_NAME_UNTIL)
    9: VersionRange(1, 10),    # OffsetFetch; v10 names topics by id only (see BY_NAME_UNTIL)
    10: VersionRange(0, 6),    # FindCoordinator; v5 (KIP-890) and v6 (KIP-932 share keys) keep v4's shape
    11: VersionRange(2, 9),    # JoinGroup
    12: VersionRange(0, 4),    # Heartbeat
    13: VersionRange(0, 5),    # LeaveGroup
    14: VersionRange(0, 5),    # SyncGroup
    15: VersionRange(0, 6),    # DescribeGroups
    16: VersionRange(0, 5),    # ListGroups
    17: VersionRange(0, 1),    # SaslHandshake (v0: bare tokens follow; v1: SaslAuthenticate, KIP-152)
    18: VersionRange(0, 4),    # ApiVersions
    19: VersionRange(2, 7),    # CreateTopics
    20: VersionRange(1, 6),    # DeleteTopics
    21: VersionRange(0, 2),    # DeleteRecords
    22: VersionRange(0, 5),    # InitProducerId
    23: VersionRange(2, 4),    # OffsetForLeaderEpoch
    24: VersionRange(0, 3),    # AddPartitionsToTxn
    25: VersionRange(0, 4),    # AddOffsetsToTxn
    26: VersionRange(0, 5),    # EndTxn; 5 is transactions v2 (epoch bump, new id in the answer)
    27: VersionRange(1, 1),    # WriteTxnMarkers (not advertised unless registered; v0 removed in Kafka 4)
    28: VersionRange(0, 5),    # TxnOffsetCommit; 5 is transactions v2 (implicit offsets partition)
    29: VersionRange(1, 3),    # DescribeAcls (SECURITY_DISABLED: no authorizer)
    30: VersionRange(1, 3),    # CreateAcls
    31: VersionRange(1, 3),    # DeleteAcls
    32: VersionRange(1, 4),    # DescribeConfigs
    33: VersionRange(0, 2),    # AlterConfigs
    35: VersionRange(1, 5),    # DescribeLogDirs
    36: VersionRange(0, 2),    # SaslAuthenticate (v1: session lifetime, KIP-368)
    37: VersionRange(0, 3),    # CreatePartitions
    42: VersionRange(0, 2),    # DeleteGroups
    43: VersionRange(0, 2),    # ElectLeaders
    44: VersionRange(0, 1),    # IncrementalAlterConfigs
    45: VersionRange(0, 1),    # AlterPartitionReassignments
    46: VersionRange(0, 0),    # ListPartitionReassignments
    47: VersionRange(0, 0),    # OffsetDelete
    48: VersionRange(0, 1),    # DescribeClientQuotas
    49: VersionRange(0, 1),    # AlterClientQuotas
    50: VersionRange(0, 0),    # DescribeUserScramCredentials
    51: VersionRange(0, 0),    # AlterUserScramCredentials
    57: VersionRange(0, 2),    # UpdateFeatures (kafka-features.sh); v2 answers without per-feature results
    60: VersionRange(0, 2),    # DescribeCluster
    61: VersionRange(0, 0),    # DescribeProducers
    65: VersionRange(0, 0),    # DescribeTransactions
    66: VersionRange(0, 2),    # ListTransactions
    68: VersionRange(0, 1),    # ConsumerGroupHeartbeat (KIP-848); v1 has the client choose the member id
    69: VersionRange(0, 1),    # ConsumerGroupDescribe (KIP-848)
    88: VersionRange(0, 0),    # StreamsGroupHeartbeat (KIP-1071)
    89: VersionRange(0, 0),    # StreamsGroupDescribe (KIP-1071)
    76: VersionRange(1, 1),    # ShareGroupHeartbeat (KIP-932; v0 was 4.0's early access)
    77: VersionRange(1, 1),    # ShareGroupDescribe
    78: VersionRange(1, 2),    # ShareFetch (v2: ShareAcquireMode, KIP-1206; RENEW, KIP-1222)
    79: VersionRange(1, 2),    # ShareAcknowledge (v2: RENEW)
    90: VersionRange(0, 1),    # DescribeShareGroupOffsets (v1: the lag, KIP-1226)
    91: VersionRange(0, 0),    # AlterShareGroupOffsets
    92: VersionRange(0, 0),    # DeleteShareGroupOffsets
    74: VersionRange(0, 1),    # ListConfigResources (KIP-1142; v0 was ListClientMetricsResources)
    75: VersionRange(0, 0),    # DescribeTopicPartitions (KIP-966)
})

# APIs whose newer versions name topics by id only (KIP-516) while their handlers work by name: the
# handler's shape is the last version that names topics, and a request of a later version is handed
# on unconverted, for the topic-id door in front of the handler (broker/topic_ids.py) to translate
# both ways. Kafka keeps both fields in one class; kio has one class per version.
BY_NAME_UNTIL: Final[Mapping[int, int]] = MappingProxyType({
    0: 12,    # Produce
    1: 12,    # Fetch
    8: 9,     # OffsetCommit
    9: 9,     # OffsetFetch
})


def canonical_version(api_key: int) -> int:
    """The version whose shape the API's handler reads and answers in."""
    by_name = BY_NAME_UNTIL.get(api_key)
    return SUPPORTED[api_key].max if by_name is None else by_name


def by_topic_id(api_key: int, api_version: int) -> bool:
    """True when this version of the API names topics by id where its handler works by name."""
    by_name = BY_NAME_UNTIL.get(api_key)
    return by_name is not None and api_version > by_name


@functools.cache
def api_name(api_key: int) -> str:
    """Kafka's name of an API key ("Fetch"), or "api <key>" for one kio does not know."""
    for version in range(0, 32):
        try:
            return str(_request_class(api_key, version).__name__).removesuffix("Request")
        except Exception:  # noqa: BLE001 - kio raises various errors for unknown keys/versions
            continue
    return f"api {api_key}"


def request_class(api_key: int, version: int) -> type[Any]:
    return _request_class(api_key, version)


def response_class(api_key: int, version: int) -> type[Any]:
    return _response_class(api_key, version)


@functools.cache
def _request_class(api_key: int, version: int) -> type[Any]:
    return load_request_schema(api_key, version)


@functools.cache
def _response_class(api_key: int, version: int) -> type[Any]:
    return load_response_schema(api_key, version)


def canonical_request(api_key: int) -> type[Any]:
    return request_class(api_key, canonical_version(api_key))


def canonical_response(api_key: int) -> type[Any]:
    return response_class(api_key, canonical_version(api_key))


def upgrade(entity: Any) -> Any:
    """Convert a request entity to the shape of the highest version served for its API. A
    version whose fields are the canonical one's (Produce v3-v11, for one) is handed on as it is:
    handlers read fields, not classes, and copying every nested entity of a large request cost
    7 % of a small Produce and 10 % of one spanning 10,000 partitions (issue 17). A version that
    names topics by id where the handler works by name is handed on too (BY_NAME_UNTIL)."""
    if _handed_on(type(entity)):
        return entity
    target = canonical_request(entity.__api_key__)
    upgraded = convert(entity, target)
    fixup = REQUEST_FIXUPS.get(entity.__api_key__)
    if fixup is not None and upgraded is not entity:
        upgraded = fixup(entity, upgraded)
    return upgraded


@functools.cache
def _handed_on(cls: type[Any]) -> bool:
    """upgrade's decision for a class, made once (~1 us per request when made each time)."""
    return by_topic_id(cls.__api_key__, cls.__version__) or same_shape(cls, canonical_request(cls.__api_key__))


def _delete_topics_by_name(old: Any, new: Any) -> Any:
    # DeleteTopics v0-5 name topics in `topic_names`; v6 in `topics` with optional ids.
    names = getattr(old, "topic_names", None)
    if not names:
        return new
    state_cls = nested_class(type(new), "topics")
    return dataclasses.replace(new, topics=tuple(state_cls(name=n, topic_id=uuid.UUID(int=0)) for n in names))


def nested_class(cls: type[Any], field_name: str) -> type[Any]:
    """The entity class of one nested field (a list's element class for a list)."""
    for f in dataclasses.fields(cls):
        if f.name == field_name:
            return classify_field(f).type_  # type: ignore[no-any-return,union-attr]
    raise KeyError(field_name)


def _find_coordinator_single_key(old: Any, new: Any) -> Any:
    # FindCoordinator v0-3 carry one `key`; v4 (KIP-699) a batch in `coordinator_keys`.
    key = getattr(old, "key", None)
    if key is None:
        return new
    return dataclasses.replace(new, coordinator_keys=(key,))


def _leave_group_single_member(old: Any, new: Any) -> Any:
    # LeaveGroup v0-2 name one `member_id`; v3+ (KIP-345) a batch of `members`.
    member_id = getattr(old, "member_id", None)
    if member_id is None:
        return new
    identity = nested_class(type(new), "members")
    return dataclasses.replace(new, members=(identity(member_id=member_id, group_instance_id=None),))


def _offset_fetch_single_group(old: Any, new: Any) -> Any:
    # OffsetFetch v0-7 ask for one `group_id`; v8+ (KIP-709) for a batch of `groups`.
    group_id = getattr(old, "group_id", None)
    if group_id is None:
        return new
    group_cls = nested_class(type(new), "groups")
    topic_cls = nested_class(group_cls, "topics")
    topics = None if old.topics is None else tuple(convert(t, topic_cls) for t in old.topics)
    return dataclasses.replace(new, groups=(group_cls(group_id=group_id, topics=topics),))


def _update_features_allow_downgrade(old: Any, new: Any) -> Any:
    # UpdateFeatures v0 says allow_downgrade; v1+ an upgrade_type (1 upgrade, 2 safe downgrade).
    updates = getattr(old, "feature_updates", ())
    if not updates or not hasattr(updates[0], "allow_downgrade"):
        return new
    return dataclasses.replace(new, feature_updates=tuple(
        dataclasses.replace(n, upgrade_type=type(n.upgrade_type)(2 if o.allow_downgrade else 1))
        for o, n in zip(updates, new.feature_updates, strict=True)))


# Requests whose older versions carry data under another field name than the canonical shape.
REQUEST_FIXUPS: dict[int, Callable[[Any, Any], Any]] = {
    57: _update_features_allow_downgrade,
    9: _offset_fetch_single_group,
    10: _find_coordinator_single_key,
    13: _leave_group_single_member,
    20: _delete_topics_by_name,
}


def _find_coordinator_top_level(canonical: Any, old: Any) -> Any:
    # FindCoordinator v0-3 answer one coordinator in top-level fields; v4 a `coordinators` list.
    if not canonical.coordinators:
        return old
    c = canonical.coordinators[0]
    changes = {"node_id": c.node_id, "host": c.host, "port": c.port, "error_code": c.error_code}
    names = {f.name for f in dataclasses.fields(old)}
    if "error_message" in names:
        changes["error_message"] = c.error_message
    return dataclasses.replace(old, **{k: v for k, v in changes.items() if k in names})


def _leave_group_top_level(canonical: Any, old: Any) -> Any:
    # LeaveGroup v0-2 have no per-member results: a single member's error is the top-level one.
    if canonical.error_code == 0 and len(canonical.members) == 1:
        return dataclasses.replace(old, error_code=canonical.members[0].error_code)
    return old


def _offset_fetch_top_level(canonical: Any, old: Any) -> Any:
    # OffsetFetch v0-7 answer one group in top-level fields; v8+ a `groups` list. v0-1 have no
    # top-level error code: a group error goes on every partition, as Kafka does.
    names = {f.name for f in dataclasses.fields(old)}
    if "groups" in names or not canonical.groups:
        return old
    group = canonical.groups[0]
    topic_cls = nested_class(type(old), "topics")
    part_cls = nested_class(topic_cls, "partitions")
    topics = []
    for t in group.topics:
        parts = tuple(convert(p, part_cls) for p in t.partitions)
        if "error_code" not in names and group.error_code:
            parts = tuple(dataclasses.replace(p, error_code=group.error_code) for p in parts)
        topics.append(topic_cls(name=t.name, partitions=parts))
    changes: dict[str, Any] = {"topics": tuple(topics)}
    if "error_code" in names:
        changes["error_code"] = group.error_code
    return dataclasses.replace(old, **changes)


# Responses whose older versions carry data under another field name: (canonical, downgraded) -> fixed.
RESPONSE_FIXUPS: dict[int, Callable[[Any, Any], Any]] = {
    9: _offset_fetch_top_level,
    10: _find_coordinator_top_level,
    13: _leave_group_top_level,
}


def downgrade(entity: Any, version: int) -> Any:
    """Convert a response entity to the given version of its API."""
    downgraded = convert(entity, response_class(entity.__api_key__, version))
    fixup = RESPONSE_FIXUPS.get(entity.__api_key__)
    if fixup is not None and downgraded is not entity:
        downgraded = fixup(entity, downgraded)
    return downgraded


@functools.cache
def same_shape(source: type[Any], target: type[Any]) -> bool:
    """True when the two entity classes have the same fields, in order, with the same wire types
    and nullability, nested entities alike: a value of one reads as a value of the other."""
    if source is target:
        return True
    a, b = dataclasses.fields(source), dataclasses.fields(target)
    if [f.name for f in a] != [f.name for f in b]:
        return False
    for fa, fb in zip(a, b, strict=True):
        if fa.metadata.get("kafka_type") != fb.metadata.get("kafka_type") or is_optional(fa) != is_optional(fb):
            return False
        ka, kb = classify_field(fa), classify_field(fb)
        if type(ka) is not type(kb):
            return False
        if isinstance(ka, EntityField | EntityTupleField) and not same_shape(ka.type_, kb.type_):
            return False
    return True


def convert(entity: Any, target: type[Any]) -> Any:
    if entity is None or type(entity) is target:
        return entity
    return _converter(type(entity), target)(entity)


@functools.cache
def _converter(source: type[Any], target: type[Any]) -> Callable[[Any], Any]:
    source_fields = {f.name for f in dataclasses.fields(source)}
    copied: list[tuple[str, Callable[[Any], Any]]] = []
    defaults: dict[str, Any] = {}
    for f in dataclasses.fields(target):
        if f.name in source_fields:
            copied.append((f.name, _copier(f)))
        else:
            defaults[f.name] = _default_for(f)

    def run(entity: Any) -> Any:
        kwargs = dict(defaults)
        for name, copy in copied:
            kwargs[name] = copy(getattr(entity, name))
        return target(**kwargs)

    return run


def _copier(f: dataclasses.Field[Any]) -> Callable[[Any], Any]:
    kind = classify_field(f)
    if isinstance(kind, EntityField):
        sub = kind.type_
        return lambda v: None if v is None else convert(v, sub)
    if isinstance(kind, EntityTupleField):
        sub = kind.type_
        return lambda v: None if v is None else tuple(convert(x, sub) for x in v)
    return lambda v: v


def _default_for(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # pragma: no cover - kio uses plain defaults
        return f.default_factory()
    if is_optional(f):
        return None
    kind = classify_field(f)
    if isinstance(kind, EntityTupleField | PrimitiveTupleField):
        return ()
    if isinstance(kind, EntityField):
        sub = kind.type_
        return sub(**{g.name: _default_for(g) for g in dataclasses.fields(sub)})
    if kind.type_ is bool:
        return False  # kio's implicit defaults have no bool (Metadata v0-7 -> v12 needs one)
    if isinstance(kind.type_, type) and issubclass(kind.type_, enum.IntEnum):
        return kind.type_(0)  # ErrorCode.none: kio has no implicit default for enums
    return get_implicit_default(kind.type_)
