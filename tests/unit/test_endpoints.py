"""Push endpoint safety, with a fake resolver (no network)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from chalicelib.config import Config
from chalicelib.core.access.endpoints import parse_push_endpoint, validate_push_endpoint
from chalicelib.core.errors import InvalidArgument
from chalicelib.store.resolver import EndpointResolver
from chalicelib.store.workers import Workers

DNS: dict[str, list[str]] = {
    "push.example.com": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
    "internal.example.com": ["10.1.2.3"],
    "mixed.example.com": ["93.184.216.34", "192.168.1.10"],
    "metadata.example.com": ["169.254.169.254"],
    "mapped.example.com": ["::ffff:169.254.169.254"],
    "localhost": ["127.0.0.1", "::1"],
    "api.corp": ["172.20.0.5"],
    "garbage.example.com": ["not-an-address"],
}


def fake_resolve(host: str) -> list[str]:
    if host not in DNS:
        raise OSError(f"[Errno -2] Name or service not known: {host}")
    return DNS[host]


def check(url: str, *, deployed: bool = True, allow_list: Sequence[str] = ()) -> None:
    validate_push_endpoint(url, deployed=deployed, allow_list=allow_list, resolve=fake_resolve)


def refused(url: str, *, deployed: bool = True, allow_list: Sequence[str] = ()) -> str:
    with pytest.raises(InvalidArgument) as info:
        check(url, deployed=deployed, allow_list=allow_list)
    assert info.value.status == "INVALID_ARGUMENT"
    return info.value.message


@pytest.mark.parametrize(
    "url",
    [
        "https://push.example.com/handler",
        "https://PUSH.example.com.:8443/a/b?token=x",
        "https://93.184.216.34/",
        "https://[2606:2800:220:1:248:1893:25c8:1946]/push",
    ],
)
def test_public_https_endpoints_are_accepted(url: str) -> None:
    check(url)


@pytest.mark.parametrize(
    "url",
    [
        "",
        "push.example.com/handler",
        "/relative/path",
        "ftp://push.example.com/",
        "javascript:alert(1)",
        "https:///nohost",
        "https://push.example.com:99999/",
        "https://push.example.com:0/",
        "https://push example.com/",
        "https://push.example.com/\n",
        "https://bad_host..example.com/",
        "https://-bad.example.com/",
        "https://[not-an-ip]/",
    ],
)
def test_malformed_urls_are_refused_in_both_modes(url: str) -> None:
    refused(url)
    refused(url, deployed=False)


def test_http_is_refused_when_deployed() -> None:
    assert "https" in refused("http://push.example.com/handler")
    check("http://push.example.com/handler", deployed=False)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://127.0.0.1/", "loopback"),
        ("https://127.1.2.3:8080/", "loopback"),
        ("https://[::1]/", "loopback"),
        ("https://localhost/", "loopback"),
        ("https://10.0.0.1/", "private"),
        ("https://172.16.5.4/", "private"),
        ("https://172.31.255.255/", "private"),
        ("https://192.168.0.1/", "private"),
        ("https://[fd00:ec2::254]/", "private"),
        ("https://100.64.0.1/", "private"),
        ("https://internal.example.com/", "private"),
        ("https://mixed.example.com/", "private"),
        ("https://169.254.169.254/latest/meta-data/", "link-local"),
        ("https://metadata.example.com/", "link-local"),
        ("https://[fe80::1]/", "link-local"),
        ("https://[fe80::1%25eth0]/", "link-local"),
        ("https://[::ffff:169.254.169.254]/", "link-local"),
        ("https://mapped.example.com/", "link-local"),
        ("https://[::ffff:127.0.0.1]/", "loopback"),
        ("https://[64:ff9b::a9fe:a9fe]/", "link-local"),
        ("https://[2002:a00:1::]/", "private"),
        ("https://0.0.0.0/", "unspecified"),
        ("https://[::]/", "unspecified"),
        ("https://224.0.0.1/", "multicast"),
        ("https://[ff02::1]/", "multicast"),
        ("https://255.255.255.255/", "reserved"),
    ],
)
def test_non_public_addresses_are_refused_when_deployed(url: str, reason: str) -> None:
    message = refused(url)
    assert f"is a {reason} address" in message


def test_public_addresses_near_private_ranges_are_accepted() -> None:
    for url in ("https://172.32.0.1/", "https://11.0.0.1/", "https://192.169.0.1/", "https://169.255.0.1/"):
        check(url)


def test_unresolvable_host_is_refused_when_deployed() -> None:
    assert "does not resolve" in refused("https://nowhere.example.com/")
    assert "does not resolve" in refused("https://garbage.example.com/")
    check("http://nowhere.example.com/", deployed=False)


def test_allow_list_by_hostname_and_network() -> None:
    check("https://internal.example.com/", allow_list=["INTERNAL.example.com"])
    check("https://internal.example.com/", allow_list=["10.0.0.0/8"])
    check("https://10.1.2.3/", allow_list=["10.1.2.3"])
    check("https://api.corp/", allow_list=["172.20.0.0/16"])
    check("https://[fd00::5]/", allow_list=["fd00::/8"])
    check("https://mixed.example.com/", allow_list=["192.168.1.0/24"])
    refused("https://internal.example.com/", allow_list=["other.example.com", "192.168.0.0/16", "fd00::/8", " "])
    refused("https://10.1.2.3/", allow_list=["internal.example.com"])
    # The allow list does not lift the https rule.
    refused("http://internal.example.com/", allow_list=["internal.example.com"])


def test_local_mode_allows_loopback_and_private() -> None:
    for url in (
        "http://localhost:8080/push",
        "http://127.0.0.1:8080/push",
        "http://[::1]:8080/",
        "http://internal.example.com/",
        "http://192.168.1.2/",
        "http://0.0.0.0:9000/",
    ):
        check(url, deployed=False)


def test_local_mode_still_refuses_link_local_and_multicast() -> None:
    assert "link-local" in refused("http://169.254.169.254/", deployed=False)
    assert "link-local" in refused("http://metadata.example.com/", deployed=False)
    assert "multicast" in refused("http://224.0.0.1/", deployed=False)
    check("http://169.254.169.254/", deployed=False, allow_list=["169.254.169.254/32"])


def test_resolver_errors_count_as_unresolvable() -> None:
    def broken(host: str) -> list[str]:
        raise UnicodeError("label too long")

    with pytest.raises(InvalidArgument, match="does not resolve"):
        validate_push_endpoint("https://x.example.com/", deployed=True, allow_list=[], resolve=broken)


def test_resolver_resolves_ip_literals_without_network() -> None:
    resolver = EndpointResolver(Config(), Workers())
    assert resolver.resolve("127.0.0.1", 5.0) == ["127.0.0.1"]
    assert resolver.resolve("::1", 5.0) == ["::1"]


# -- one parser: nothing two URL readers could read differently -------------------------------------------
@pytest.mark.parametrize(
    "url",
    [
        "https://169.254.169.254\\@push.example.com/",  # urlsplit: push.example.com; urllib3: 169.254.169.254
        "https://push.example.com\\@169.254.169.254/",
        "https://push.example.com/a\\b",
        "https://user@push.example.com/",
        "https://user:pass@push.example.com/",
        "https://push.example.com@169.254.169.254/",
        "https://@push.example.com/",
        "https://push.example.com\t/",
        "https://push.ex\u200bample.com/",  # a format character the IDNA codec would silently drop
        "https://push.example.com/\u2028",
        "https://push.example.com/\x85",
        "https://push.example.com:/",
        "https://push.example.com:+443/",
        "https://push.example.com:0x1bb/",
        "https://push.example.com:443:80/",
        "https://[93.184.216.34]/",
        "https://2130706433/",
        "https://0x7f000001/",
        "https://0x7f.0.0.1/",
        "https://0177.0.0.1/",
        "https://127.1/",
        "https://256.1.1.1/",
        "https://push%2eexample.com/",
        "https:push.example.com/",
        "https:/push.example.com/",
        "https://exa\uff20mple.com/",  # a fullwidth '@' that IDNA maps to '@'
        "https://" + "a" * 2100 + ".com/",
    ],
)
def test_ambiguous_urls_are_refused_in_both_modes(url: str) -> None:
    refused(url)
    refused(url, deployed=False)


def test_the_parsed_parts_are_what_is_sent() -> None:
    endpoint = parse_push_endpoint("HTTPS://Push.Example.COM.:8443/a/b?x=1&y=%2F#fragment")
    assert (endpoint.scheme, endpoint.host, endpoint.port) == ("https", "push.example.com", 8443)
    assert endpoint.target == "/a/b?x=1&y=%2F" and endpoint.host_header == "push.example.com:8443"
    assert parse_push_endpoint("https://push.example.com").target == "/"
    assert parse_push_endpoint("https://push.example.com?q").target == "/?q"
    assert parse_push_endpoint("https://b\u00fccher.example/p\u00e4th").host == "xn--bcher-kva.example"
    assert parse_push_endpoint('https://push.example.com/p\u00e4th"x"').target == "/p%C3%A4th%22x%22"
    v6 = parse_push_endpoint("http://[2606:2800:220:1::1]:80/")
    assert v6.literal is not None and v6.host_header == "[2606:2800:220:1::1]"


def test_the_target_holds_the_checked_addresses() -> None:
    target = validate_push_endpoint("https://push.example.com/", deployed=True, allow_list=[], resolve=fake_resolve)
    assert [str(a) for a in target.addresses] == DNS["push.example.com"]
    assert target.is_checked_peer("93.184.216.34") and target.is_checked_peer("2606:2800:220:1:248:1893:25c8:1946")
    assert not target.is_checked_peer("10.1.2.3") and not target.is_checked_peer("garbage")


# -- the address blocklist (strict rules) ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://[::169.254.169.254]/", "link-local"),  # IPv4-compatible
        ("https://[::ffff:0:a9fe:a9fe]/", "link-local"),  # IPv4-translated
        ("https://[64:ff9b:1::a9fe:a9fe]/", "link-local"),  # local-use NAT64
        ("https://[64:ff9b:1::808:808]/", "local NAT64"),
        ("https://[2001::1]/", "Teredo"),
        ("https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "Teredo"),
        ("https://[2002:c612:1::]/", "non-public"),  # 6to4 of 198.18.0.1
        ("https://198.18.0.1/", "non-public"),
        ("https://192.0.0.1/", "non-public"),
        ("https://192.0.2.1/", "non-public"),
        ("https://[2001:db8::1]/", "non-public"),
        ("https://[::ffff:10.0.0.1]/", "private"),
    ],
)
def test_embedded_and_special_addresses_are_refused_when_strict(url: str, reason: str) -> None:
    assert f"is a {reason} address" in refused(url)


def test_embedded_public_addresses_are_accepted() -> None:
    for url in ("https://[::ffff:93.184.216.34]/", "https://[64:ff9b::5db8:d822]/", "https://[2002:5db8:d822::1]/"):
        check(url)


def test_local_rules_still_refuse_embedded_link_local() -> None:
    for url in ("http://[::169.254.169.254]/", "http://[::ffff:0:a9fe:a9fe]/", "http://[64:ff9b:1::a9fe:a9fe]/"):
        assert "link-local" in refused(url, deployed=False)


# -- resolution with a deadline -----------------------------------------------------------------------------
def test_a_resolution_timeout_is_invalid_in_both_modes() -> None:
    def slow(host: str) -> list[str]:
        raise TimeoutError("resolving took too long")

    for deployed in (True, False):
        with pytest.raises(InvalidArgument, match="could not be resolved in time"):
            validate_push_endpoint("https://slow.example.com/", deployed=deployed, allow_list=[], resolve=slow)


def test_the_resolver_gives_up_after_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from chalicelib.store import resolver

    release = threading.Event()

    def hanging(host: str) -> list[str]:
        release.wait(30)
        return ["93.184.216.34"]

    monkeypatch.setattr(resolver, "_getaddrinfo", hanging)
    dns = resolver.EndpointResolver(Config(), Workers())
    try:
        with pytest.raises(TimeoutError):
            dns.resolve("hangs.example.com", 0.05)
    finally:
        release.set()


def test_push_config_validation_does_not_wait_for_a_hanging_resolver(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket
    import threading
    import time
    from typing import cast

    from chalicelib.core.wire.models import PushConfig, Subscription
    from chalicelib.service.context import Context
    from chalicelib.service.push_config import validate

    release = threading.Event()

    def hanging(*args: object, **kwargs: object) -> list[object]:
        release.wait(5)
        raise OSError("no answer")

    class Ctx:
        config = Config(deployed=True, push_dns_timeout_seconds=0.2)
        resolver = EndpointResolver(config, Workers())

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    spec = Subscription(push_config=PushConfig(push_endpoint="https://hangs.example.com/push"))
    start = time.monotonic()
    try:
        with pytest.raises(InvalidArgument, match="could not be resolved in time"):
            validate(cast(Context, Ctx()), spec)
        assert time.monotonic() - start < 2.0
    finally:
        release.set()


def test_hanging_lookups_hold_at_most_a_few_of_the_shared_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lookups run on the context's workers (store/workers.py), at most MAX_LOOKUPS at once: a resolver that
    never answers leaves the other workers to the stores, and a lookup past the bound waits for a slot no longer
    than its own timeout."""
    import threading

    from chalicelib.store import resolver

    release = threading.Event()

    def hanging(host: str) -> list[str]:
        release.wait(30)
        return ["93.184.216.34"]

    monkeypatch.setattr(resolver, "_getaddrinfo", hanging)
    workers = Workers(max_workers=resolver.MAX_LOOKUPS + 1)
    dns = resolver.EndpointResolver(Config(), workers)
    try:
        for n in range(resolver.MAX_LOOKUPS + 1):  # unbounded, the last lookup would take the last worker
            with pytest.raises(TimeoutError):
                dns.resolve(f"hangs-{n}.example.com", 0.05)
        assert workers.submit(lambda: "a store call").result(timeout=5) == "a store call"
    finally:
        release.set()
