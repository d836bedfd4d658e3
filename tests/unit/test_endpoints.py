"""Push endpoint safety, with a fake resolver (no network)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from chalicelib.core.endpoints import validate_push_endpoint
from chalicelib.core.errors import InvalidArgument
from chalicelib.store.resolver import resolve

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
    assert resolve("127.0.0.1", 5.0) == ["127.0.0.1"]
    assert resolve("::1", 5.0) == ["::1"]
