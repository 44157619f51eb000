"""The listener's own bind of an IP address (broker/server.py bound_literal_address): bound as
asyncio's create_server would bind it, and a failed bind says which address, as asyncio's does."""

from __future__ import annotations

import errno
import socket

import pytest

from minikafka.broker.server import bound_literal_address

pytestmark = pytest.mark.unit


def test_an_ipv4_address_is_bound_with_reuse_address_as_asyncio_binds_it() -> None:
    sock = bound_literal_address("127.0.0.1", 0)
    assert sock is not None
    with sock:
        assert sock.family == socket.AF_INET and sock.type == socket.SOCK_STREAM
        assert sock.getsockname()[0] == "127.0.0.1" and sock.getsockname()[1] > 0
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR)


def test_an_ipv6_address_is_bound_for_ipv6_only() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    try:
        sock = bound_literal_address("::1", 0)
    except OSError as exc:  # a machine with IPv6 compiled in but no ::1
        pytest.skip(f"::1 cannot be bound here: {exc}")
    assert sock is not None
    with sock:
        assert sock.family == socket.AF_INET6 and sock.getsockname()[0] == "::1"
        assert sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY)


@pytest.mark.parametrize("host", ["localhost", "", "broker.example", "fe80::1%lo"])
def test_a_name_or_a_scoped_address_is_left_to_asyncio_to_resolve(host: str) -> None:
    # A scoped IPv6 address needs its scope id, which getaddrinfo gives and a bare bind loses.
    assert bound_literal_address(host, 0) is None


def test_a_busy_port_raises_address_in_use_naming_the_address() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(OSError) as caught:
            bound_literal_address("127.0.0.1", port)
    assert caught.value.errno == errno.EADDRINUSE
    assert f"('127.0.0.1', {port})" in str(caught.value) and "address already in use" in str(caught.value)


def test_a_busy_ipv6_port_is_named_as_asyncio_names_it() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    with socket.socket(socket.AF_INET6) as busy:
        try:
            busy.bind(("::1", 0))
        except OSError as exc:
            pytest.skip(f"::1 cannot be bound here: {exc}")
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(OSError) as caught:
            bound_literal_address("::1", port)
    assert caught.value.errno == errno.EADDRINUSE
    assert f"('::1', {port}, 0, 0)" in str(caught.value)
