"""Kafka's ConfigDef in the small: reading a config value as its Java type, the validators Kafka's
configs use, and the error messages Kafka answers with, shared by the topic configs
(topic_config.py) and the group configs (group_config.py).

Theory of operation
- `parse_value(name, raw, kind, check, items)` is ConfigDef.parseType followed by the config's
  validator: a string Java would not read as the type is "Not a number of type ..." (or "Expected
  value to be either true or false"), a value the validator refuses is "Invalid value <v> for
  configuration <name>: <reason>".
- Kafka renders the parsed value in its message (`-1.0` for a DOUBLE, `[a, b]` for a list), so a
  validator gets the parsed value and `shown` renders it as Java would. A LIST value stays the
  string the client sent (trimmed); `items` checks it item by item and names the first bad item
  (ValidList), `check` gets the whole list.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from minikafka.config import LONG_MAX, ConfigError

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN = -(2**63)

# A validator gets the parsed value and returns Kafka's reason, or None when the value is valid.
Check = Callable[[Any], str | None]

# Kafka's DescribeConfigs ConfigSource codes.
SOURCE_TOPIC = 1
SOURCE_DYNAMIC_BROKER = 2
SOURCE_DYNAMIC_DEFAULT_BROKER = 3
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5
SOURCE_DYNAMIC_BROKER_LOGGER = 6
SOURCE_GROUP = 8
# Kafka's ConfigType codes: the code is the index of the ConfigDef type name.
CONFIG_TYPES = ("UNKNOWN", "BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD")
TYPE_CODES = {name: code for code, name in enumerate(CONFIG_TYPES)}


class ConfigEntry(NamedTuple):
    """One config as DescribeConfigs answers it; synonyms are (name, value, source)."""

    name: str
    value: str | None
    read_only: bool
    config_source: int
    config_type: int
    synonyms: tuple[tuple[str, str | None, int], ...]
    sensitive: bool = False

_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)")


def java_double(d: float) -> str:
    """Double.toString: plain between 1e-3 and 1e7, else computerized scientific notation
    (`9.223372036854776E18`), from the shortest digits that read back as d (as Java picks them)."""
    if d != d or d in (float("inf"), float("-inf")):
        return "NaN" if d != d else ("Infinity" if d > 0 else "-Infinity")
    if d == 0 or 1e-3 <= abs(d) < 1e7:
        return repr(float(d))
    from decimal import Decimal  # here: a rare case, and decimal is 1.4 ms of every start

    sign, digits, exponent = Decimal(repr(float(d))).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{len(text) - 1 + exponent}"


def shown(value: Any) -> str:
    """A parsed value as Java's toString renders it in Kafka's messages."""
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, list):
        return "[" + ", ".join(value) + "]"
    return str(value)


def render_config_value(v: Any) -> str | None:
    """A parsed config value as Kafka renders it in DescribeConfigs (booleans lower case)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return java_double(v)
    return str(v)


def at_least(n: int) -> Check:
    return lambda v: None if v >= n else f"Value must be at least {n}"


def between(lo: int, hi: int) -> Check:
    return lambda v: (f"Value must be at least {lo}" if v < lo
                      else f"Value must be no more than {hi}" if v > hi else None)


def one_of(options: Iterable[str]) -> Check:
    options = tuple(options)
    return lambda v: None if v in options else "String must be one of: " + ", ".join(options)


def _parse_as(kind: str, text: str) -> Any:
    """ConfigDef.parseType on a trimmed string: raises ValueError where Java's parser would refuse it."""
    if kind == "BOOLEAN":
        low = text.lower()
        if low not in ("true", "false"):
            raise ValueError(text)
        return low == "true"
    if kind in ("INT", "LONG"):
        if "_" in text:  # Python reads 1_000; Java does not
            raise ValueError(text)
        n = int(text)
        lo, hi = (INT_MIN, INT_MAX) if kind == "INT" else (LONG_MIN, LONG_MAX)
        if not lo <= n <= hi:
            raise ValueError(text)
        return n
    if kind == "DOUBLE":
        if not _JAVA_DOUBLE.fullmatch(text):  # Double.parseDouble's grammar, less hex
            raise ValueError(text)
        return float(text.rstrip("fFdD").replace("Infinity", "inf"))
    return text  # STRING, LIST


def parse_value(name: str, raw: str, kind: str, check: Check | None = None, items: Check | None = None,
                *, validate: bool = True) -> Any:
    """The typed value of config `name`; raises ConfigError in Kafka's words. validate=False only
    reads the type (a value stored earlier, under older rules)."""
    try:
        value = _parse_as(kind, raw.strip())
    except ValueError:
        reason = ("Expected value to be either true or false" if kind == "BOOLEAN"
                  else f"Not a number of type {kind}")
        raise ConfigError(f"Invalid value {raw} for configuration {name}: {reason}") from None
    if not validate:
        return value
    checked = [x.strip() for x in value.split(",") if x.strip()] if kind == "LIST" else value
    if kind == "LIST" and items is not None:
        for item in checked:
            reason = items(item)
            if reason is not None:
                raise ConfigError(f"Invalid value {item} for configuration {name}: {reason}")
    reason = check(checked) if check is not None else None
    if reason is not None:
        raise ConfigError(f"Invalid value {shown(checked)} for configuration {name}: {reason}")
    return value
