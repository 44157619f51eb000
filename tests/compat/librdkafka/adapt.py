"""Adapt two tests of a librdkafka source tree to one broker (LIBRDKAFKA.md says why); run before building.

Usage: python tests/compat/librdkafka/adapt.py <librdkafka-source-dir>
- 0103_transactions: its topics' replication factor 3 becomes 1 (no single broker can place 3 replicas).
- 0081_admin: the ACL sub-tests are skipped when RDK_TEST_NO_ACLS is set (they need an authorizer).
Idempotent: an adapted tree is left as it is.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def main() -> None:
    tests = Path(sys.argv[1]) / "tests"
    admin = tests / "0081-admin.c"
    s = admin.read_text()
    if "RDK_TEST_NO_ACLS" not in s:
        s, n = re.subn(r"\n(\s+)(do_test_(?:Create|Describe|Delete)Acls\(rk, mainq, [01]\);)",
                       r'\n\1if (!getenv("RDK_TEST_NO_ACLS")) \2', s)
        assert n == 6, n
        admin.write_text(s)
    txn = tests / "0103-transactions.c"
    s, n = re.subn(r"(test_create_topic_wait_exists\([^;]*?), 3, 5000\)", r"\1, 1, 5000)", txn.read_text())
    txn.write_text(s)
    print(f"adapted {tests}: 0081 ACL guards in place, {n} replication factors of 0103 set to 1")


if __name__ == "__main__":
    main()
