"""The suite's test modules have unique basenames: tests/ has no __init__.py files, so pytest
imports each test module by its basename, and a second module of the same name stops the whole
run at collection ("import file mismatch")."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

TESTS = Path(__file__).resolve().parents[1]


def test_test_module_basenames_are_unique() -> None:
    names = Counter(p.name for p in TESTS.rglob("test_*.py") if "node_modules" not in p.parts)
    assert [n for n, k in names.items() if k > 1] == []
