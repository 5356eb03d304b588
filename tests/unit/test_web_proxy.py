"""Trusted proxies (duequeue/web/proxy.py): the headers are believed from the peers named and
from nobody else; the client is the first hop from the right that is not a trusted proxy, so a
client cannot name itself; garbage is never taken for a scheme, host or address."""

from unittest import mock

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from multidict import CIMultiDict

from duequeue.errors import ConfigError
from duequeue.web.proxy import Seen, Trusted, address, parse_allowed, seen

PROXY = "10.0.0.2"


def _request(peer: str, headers: dict[str, str] | list[tuple[str, str]]) -> web.Request:
    transport = mock.Mock()
    transport.get_extra_info.side_effect = lambda name, default=None: (
        (peer, 40000) if name == "peername" else default
    )
    given = headers if isinstance(headers, list) else list(headers.items())
    return make_mocked_request(
        "GET", "/", headers=CIMultiDict([("Host", "127.0.0.1:8325"), *given]), transport=transport
    )


def _seen(peer: str, headers: dict[str, str] | list[tuple[str, str]], allowed: str) -> Seen:
    found = seen(_request(peer, headers), parse_allowed(allowed))
    assert found is not None
    return found


NGINX = {
    "X-Forwarded-For": "203.0.113.7",
    "X-Forwarded-Proto": "https",
    "X-Forwarded-Host": "queue.example.com",
}


def test_nobody_is_trusted_by_default() -> None:
    assert not parse_allowed("")
    assert seen(_request(PROXY, NGINX), parse_allowed("")) is None


def test_a_trusted_proxy_is_believed() -> None:
    found = seen(_request(PROXY, NGINX), parse_allowed("10.0.0.0/24"))
    assert found == Seen("https", "queue.example.com", "203.0.113.7")


def test_anyone_else_is_never_believed() -> None:
    for peer in ("10.0.1.2", "127.0.0.1", "203.0.113.7", "::1"):
        assert seen(_request(peer, NGINX), parse_allowed("10.0.0.0/24,192.0.2.1")) is None


def test_a_client_cannot_name_itself_through_the_proxy() -> None:
    # The client wrote "1.2.3.4" itself; nginx appended the address it saw.
    headers = {**NGINX, "X-Forwarded-For": "1.2.3.4, 203.0.113.7"}
    assert _seen(PROXY, headers, PROXY).remote == "203.0.113.7"


def test_trusted_hops_are_passed_over_and_their_scheme_lines_up() -> None:
    # client -> CDN 10.0.0.9 (https) -> nginx 10.0.0.2 (http from the CDN) -> serve.
    headers = {
        "X-Forwarded-For": "198.51.100.4, 10.0.0.9",
        "X-Forwarded-Proto": "https, http",
        "X-Forwarded-Host": "queue.example.com, internal:8080",
    }
    found = seen(_request(PROXY, headers), parse_allowed("10.0.0.0/24"))
    assert found == Seen("https", "queue.example.com", "198.51.100.4")
    # A proxy that set one value rather than appending: that value, wherever the client is.
    one = {**headers, "X-Forwarded-Proto": "https"}
    assert _seen(PROXY, one, "10.0.0.0/24").scheme == "https"


def test_every_hop_trusted_takes_the_leftmost() -> None:
    headers = {"X-Forwarded-For": "10.0.0.7, 10.0.0.9", "X-Forwarded-Proto": "https"}
    assert _seen(PROXY, headers, "10.0.0.0/24").remote == "10.0.0.7"


def test_star_trusts_every_peer_only_when_written() -> None:
    assert seen(_request("198.51.100.9", NGINX), parse_allowed("*")) is not None
    with pytest.raises(ConfigError):
        parse_allowed("*,10.0.0.1")


def test_forwarded_is_read_when_no_x_forwarded_header_is_there() -> None:
    rfc = {"Forwarded": 'for="[2001:db8::7]:4711";proto=https;host=queue.example.com'}
    found = seen(_request(PROXY, rfc), parse_allowed(PROXY))
    assert found == Seen("https", "queue.example.com", "2001:db8::7")
    # A proxy that sets X-Forwarded-* passes on a client's Forwarded: that one is not read.
    both = {**NGINX, "Forwarded": "for=1.2.3.4;proto=http;host=evil.example"}
    assert seen(_request(PROXY, both), parse_allowed(PROXY)) == Seen(
        "https", "queue.example.com", "203.0.113.7"
    )


@pytest.mark.parametrize(
    ("header", "value"),
    [("X-Forwarded-Proto", "javascript"), ("X-Forwarded-Proto", "ftp"),
     ("X-Forwarded-Host", "evil.example/path"), ("X-Forwarded-Host", "a b"),
     ("X-Forwarded-Host", "x" * 300), ("X-Forwarded-Host", "<script>")],
)  # fmt: skip
def test_garbage_is_no_scheme_or_host(header: str, value: str) -> None:
    found = seen(_request(PROXY, {**NGINX, header: value}), parse_allowed(PROXY))
    assert found is not None
    assert found.scheme in ("https", "http") and found.host in (
        "queue.example.com",
        "127.0.0.1:8325",
    )
    assert value not in (found.scheme, found.host)


@pytest.mark.parametrize("value", ["unknown", "_hidden", "not an address", ""])
def test_a_client_that_is_no_address_stays_the_proxy(value: str) -> None:
    found = seen(_request(PROXY, {**NGINX, "X-Forwarded-For": value}), parse_allowed(PROXY))
    assert found is not None and found.remote == PROXY and found.scheme == "https"


def test_several_header_lines_are_one_list() -> None:
    lines = [("X-Forwarded-For", "1.2.3.4"), ("X-Forwarded-For", "203.0.113.7")]
    assert _seen(PROXY, lines, PROXY).remote == "203.0.113.7"


def test_an_ipv4_mapped_peer_is_its_ipv4_address() -> None:
    assert seen(_request("::ffff:10.0.0.2", NGINX), parse_allowed(PROXY)) is not None
    assert str(address("[::ffff:192.0.2.1]:80")) == "192.0.2.1"
    assert str(address("192.0.2.1:8080")) == "192.0.2.1"
    assert str(address("2001:db8::1")) == "2001:db8::1"
    assert address("localhost") is None


@pytest.mark.parametrize("bad", ["localhost", "10.0.0.1/8", "300.1.1.1", "10.0.0.0/33", "*x",
                                 "['127.0.0.1']"])  # fmt: skip
def test_a_setting_that_is_no_address_is_refused_naming_it(bad: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_allowed(f"127.0.0.1, {bad}")
    assert exc.value.field == "web_forwarded_allow_ips"


def test_addresses_and_networks_of_both_families() -> None:
    trusted = parse_allowed(" 127.0.0.1 , 10.0.0.0/8,::1, fd00::/8 ")
    assert trusted == Trusted(tuple(trusted.networks)) and len(trusted.networks) == 4
    for inside in ("127.0.0.1", "10.200.0.1", "::1", "fd12::1"):
        a = address(inside)
        assert a is not None and trusted.holds(a)
    for outside in ("127.0.0.2", "11.0.0.1", "::2", "fe80::1"):
        a = address(outside)
        assert a is not None and not trusted.holds(a)
