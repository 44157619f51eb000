"""A request for an API or version the broker does not serve closes the connection, as Kafka does,
and leaves one warning that names the API and the client (client id and the software name and
version it sent in ApiVersions): otherwise users learn of it only from client-side errors, or
never (issue 16, item 4)."""

from __future__ import annotations

import re
import time

import pytest
from rawclient import ConnectionClosed, RawClient, api_versions_v3, request_header

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def _warnings(log_path) -> list[str]:  # type: ignore[no-untyped-def]
    return [line for line in log_path.read_text().splitlines() if "unsupported_api" in line]


def _wait_for(predicate, timeout: float = 10.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_unsupported_version_is_one_warning_naming_the_client(broker_factory) -> None:
    broker = broker_factory()
    with RawClient.connect(broker.bootstrap, client_id="shop-app") as c:
        assert int(c.request(api_versions_v3(), 3).error_code) == 0
        c.send_frame(request_header(1, 19, 7, client_id=b"shop-app", flexible=True) + b"\x00" * 32)  # Fetch v19
        with pytest.raises(ConnectionClosed):
            c.recv_frame(timeout=5)
    (line,) = _wait_for(lambda: _warnings(broker.log_path))
    for field in ("api=Fetch", "api_version=19", "served=4-18", "client_id=shop-app",
                  "client_software_name=rawclient", "client_software_version=1.0"):
        assert field in line, (field, line)
    # An API the broker does not serve at all, from a client that never sent ApiVersions.
    with RawClient.connect(broker.bootstrap, client_id="old-tool") as c:
        c.send_frame(request_header(38, 2, 9, client_id=b"old-tool", flexible=True) + b"\x00" * 32)
        with pytest.raises(ConnectionClosed):
            c.recv_frame(timeout=5)
    lines = _wait_for(lambda: len(_warnings(broker.log_path)) == 2 and _warnings(broker.log_path))
    assert re.search(r"api=CreateDelegationToken .*client_id=old-tool", lines[1]), lines[1]
    assert "served='not served'" in lines[1]
