"""broker/config_changes.py: IncrementalAlterConfigs and AlterConfigs as pure functions."""

from __future__ import annotations

import pytest

from minikafka.broker.config_changes import APPEND, DELETE, SET, SUBTRACT, ConfigChangeError, Rules, incremental, replace
from minikafka.protocol.errors import ErrorCode

pytestmark = pytest.mark.unit


def _validate(name: str, value: str | None) -> None:
    if name not in ("retention.ms", "cleanup.policy"):
        raise ConfigChangeError(ErrorCode.invalid_config, f"Unknown topic config name: {name}")
    if name == "retention.ms" and value is not None and not value.lstrip("-").isdigit():
        raise ConfigChangeError(ErrorCode.invalid_config, "bad")


RULES = Rules(type_of=lambda n: "LIST" if n == "cleanup.policy" else "LONG",
              effective=lambda n: {"cleanup.policy": "delete", "retention.ms": "604800000"}[n],
              validate=_validate)


def test_set_delete_append_subtract() -> None:
    assert incremental({}, [("retention.ms", SET, "5")], RULES) == {"retention.ms": "5"}
    assert incremental({"retention.ms": "5"}, [("retention.ms", DELETE, None)], RULES) == {}
    assert incremental({}, [("retention.ms", DELETE, None)], RULES) == {}
    # APPEND starts from the effective value when there is no override, and adds no duplicates.
    assert incremental({}, [("cleanup.policy", APPEND, "compact,delete")], RULES) == {"cleanup.policy": "delete,compact"}
    assert incremental({"cleanup.policy": "delete,compact"}, [("cleanup.policy", SUBTRACT, "delete")],
                       RULES) == {"cleanup.policy": "compact"}


def test_refusals() -> None:
    with pytest.raises(ConfigChangeError) as dup:
        incremental({}, [("retention.ms", SET, "1"), ("retention.ms", SET, "2")], RULES)
    assert dup.value.error_code == ErrorCode.invalid_request
    with pytest.raises(ConfigChangeError) as not_list:
        incremental({}, [("retention.ms", APPEND, "1")], RULES)
    assert str(not_list.value) == "Can't APPEND to key retention.ms because its type is not LIST."
    with pytest.raises(ConfigChangeError) as unknown:
        incremental({}, [("nope", DELETE, None)], RULES)
    assert unknown.value.error_code == ErrorCode.invalid_config
    with pytest.raises(ConfigChangeError) as bad_op:
        incremental({}, [("retention.ms", 9, "1")], RULES)
    assert bad_op.value.error_code == ErrorCode.invalid_request


def test_the_input_is_not_changed_when_refused() -> None:
    current = {"retention.ms": "5"}
    with pytest.raises(ConfigChangeError):
        incremental(current, [("retention.ms", SET, "7"), ("retention.ms", SET, "x")], RULES)
    assert current == {"retention.ms": "5"}


def test_replace_keeps_only_what_is_sent() -> None:
    assert replace([("retention.ms", "5"), ("cleanup.policy", None)], RULES) == {"retention.ms": "5"}
    with pytest.raises(ConfigChangeError):
        replace([("retention.ms", "x")], RULES)
