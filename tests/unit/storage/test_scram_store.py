"""The SCRAM credential file: survives a reopen, is readable by its owner only, and a damaged
file loses the credentials with a warning rather than stopping the broker."""

from __future__ import annotations

import stat

import pytest

from minikafka.scram.credentials import ScramCredential
from minikafka.storage.scram_store import ScramCredentialStore

pytestmark = pytest.mark.unit


def test_round_trip_and_owner_only(tmp_path) -> None:
    path = tmp_path / "scram.json"
    creds = {("alice", 1): ScramCredential(b"\x00salt", b"stored" * 5, b"server" * 5, 8192),
             ("bob", 2): ScramCredential(b"s2", b"k" * 64, b"v" * 64, 4096)}
    ScramCredentialStore(path).save(creds)
    assert ScramCredentialStore(path).entries == creds
    assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0
    ScramCredentialStore(path).save({})
    assert ScramCredentialStore(path).entries == {}


def test_owner_only_even_over_a_tmp_left_by_a_crash(tmp_path) -> None:
    path = tmp_path / "scram.json"
    leftover = tmp_path / "scram.json.tmp"
    leftover.write_text("half")
    leftover.chmod(0o644)
    ScramCredentialStore(path).save({("alice", 1): ScramCredential(b"s", b"k", b"v", 4096)})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and not leftover.exists()


@pytest.mark.parametrize("text", ["{", "[{\"user\": \"a\"}]", "[{\"user\": \"a\", \"mechanism\": 1, \"iterations\": 4096, "
                                  "\"salt\": \"!!\", \"stored_key\": \"\", \"server_key\": \"\"}]", "7"])
def test_damaged_file_loses_the_credentials_not_the_broker(tmp_path, text: str) -> None:
    path = tmp_path / "scram.json"
    path.write_text(text)
    assert ScramCredentialStore(path).entries == {}
