"""Entities built by filling their slots, for the hottest answers (issue 17).

kio's entities are frozen slotted dataclasses: their __init__ sets each field through
object.__setattr__ and builds default values (a Produce partition answer's current_leader) anew
each time. A PartitionProduceResponse took ~2.7 us that way, more than the whole Produce request's
decode. builder(cls) gives a constructor that takes every field, positionally in declared order,
and sets the same slots through the class's member descriptors: the same object, equal to the one
__init__ builds, ~10x faster with the compiled setter (minikafka.protocol._walk.entity), ~2x with
the Python reference below. Callers name the fields they pass and pass every one, defaults
included; a shared instance of a frozen default is safe to pass.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable
from typing import Any

try:
    from minikafka.protocol._walk import entity as _entity_c
except ImportError:  # pragma: no cover - where no C compiler was available
    _entity_c = None


def field_names(cls: type[Any]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def descriptors(cls: type[Any]) -> tuple[Any, ...]:
    """The member descriptors of cls's fields, in declared order (TypeError unless every field
    is a slot: only then does setting the descriptor make the object __init__ makes)."""
    found = []
    for name in field_names(cls):
        d = cls.__dict__.get(name)
        if not isinstance(d, types.MemberDescriptorType):
            raise TypeError(f"{cls.__name__}.{name} is not a slot")
        found.append(d)
    return tuple(found)


def build_py(cls: type[Any], descrs: tuple[Any, ...], *values: Any) -> Any:
    """The reference of the compiled builder."""
    if len(values) != len(descrs):
        raise TypeError("an entity needs a value for each of its fields")
    obj = object.__new__(cls)
    for d, v in zip(descrs, values):
        d.__set__(obj, v)
    return obj


def named_descriptors(cls: type[Any], names: tuple[str, ...]) -> tuple[Any, ...]:
    """descriptors(cls), once `names` are checked to be cls's fields in declared order (TypeError
    otherwise: a kio that reorders them fails at import, not by building wrong answers)."""
    if field_names(cls) != names:
        raise TypeError(f"{cls.__name__} has the fields {field_names(cls)}, not {names}")
    return descriptors(cls)


def builder(cls: type[Any], names: tuple[str, ...], *, compiled: bool = True) -> Callable[..., Any]:
    """cls(*values), the values given positionally in the order of `names` (named_descriptors)."""
    build = _entity_c if compiled and _entity_c is not None else build_py
    return functools.partial(build, cls, named_descriptors(cls, names))
