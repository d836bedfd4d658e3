"""Strict push rules against every non-global range, including those ``ipaddress.is_global`` lets through
(core/access/endpoints.py). IP literals only: no resolver is involved."""

from __future__ import annotations

import ipaddress

import pytest

from chalicelib.core.access.endpoints import refusal_reason, validate_push_endpoint
from chalicelib.core.errors import InvalidArgument


def no_dns(host: str) -> list[str]:
    raise AssertionError(f"{host} should not need resolving")


def refused(url: str, *, strict: bool = True) -> str:
    with pytest.raises(InvalidArgument) as info:
        validate_push_endpoint(url, deployed=strict, allow_list=[], resolve=no_dns)
    return info.value.message


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://[fec0::1]/", "site-local"),  # deprecated site-local: is_global on Python 3.11
        ("https://[feff:ffff::1]/", "site-local"),
        ("https://[3fff::1]/", "documentation"),  # RFC 9637
        ("https://[5f00::1]/", "non-public"),  # SRv6 SIDs
        ("https://[100:0:0:1::1]/", "non-public"),  # the dummy prefix
        ("https://[::8.8.8.8]/", "non-public"),  # deprecated IPv4-compatible form
        ("https://[::ffff:0:808:808]/", "non-public"),  # IPv4-translated (SIIT)
        ("https://[4000::1]/", "non-public"),  # unallocated, outside global unicast
        ("https://[2001:470:1f0b:1:0:5efe:a00:1]/", "private"),  # ISATAP carrying 10.0.0.1
        ("https://[2a00:1450:1::200:5efe:c0a8:101]/", "private"),  # ISATAP (universal) carrying 192.168.1.1
    ],
)
def test_ranges_is_global_misses_are_refused_when_strict(url: str, reason: str) -> None:
    assert f"is a {reason} address" in refused(url)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://[::ffff:100.64.0.1]/", "private"),
        ("https://[::ffff:0.0.0.1]/", "unspecified"),
        ("https://[::ffff:224.0.0.1]/", "multicast"),
        ("https://[64:ff9b::a00:1]/", "private"),  # NAT64 of 10.0.0.1
        ("https://[64:ff9b::7f00:1]/", "loopback"),
        ("https://[64:ff9b::1]/", "unspecified"),  # NAT64 of 0.0.0.1
        ("https://[64:ff9b::6440:1]/", "private"),  # NAT64 of 100.64.0.1
        ("https://[2002:c0a8:101::1]/", "private"),  # 6to4 of 192.168.1.1
        ("https://[2002:7f00:1::]/", "loopback"),
        ("https://[2002:a9fe:a9fe::]/", "link-local"),
        ("https://0.1.2.3/", "unspecified"),
        ("https://100.127.255.254/", "private"),
        ("https://239.255.255.250/", "multicast"),
        ("https://[ff0e::1]/", "multicast"),  # global-scope multicast: is_global too
        ("https://192.0.0.170/", "non-public"),
        ("https://198.51.100.1/", "non-public"),
        ("https://203.0.113.1/", "non-public"),
    ],
)
def test_embedded_and_special_ipv4_ranges_are_refused_when_strict(url: str, reason: str) -> None:
    assert f"is a {reason} address" in refused(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://[2606:4700::1111]/",
        "https://[2a00:1450:4001::1]/",
        "https://[::ffff:93.184.216.34]/",
        "https://[64:ff9b::5db8:d822]/",
        "https://[2002:5db8:d822::1]/",
        "https://[2001:470:1f0b:1:0:5efe:5db8:d822]/",  # ISATAP carrying a public address
        "https://93.184.216.34/",
    ],
)
def test_public_addresses_are_accepted_when_strict(url: str) -> None:
    validate_push_endpoint(url, deployed=True, allow_list=[], resolve=no_dns)


def test_local_rules_treat_site_local_as_private() -> None:
    validate_push_endpoint("http://[fec0::1]:8080/", deployed=False, allow_list=[], resolve=no_dns)
    assert refusal_reason(ipaddress.ip_address("fec0::1"), deployed=False) is None


def test_the_allow_list_still_opens_a_site_local_network() -> None:
    validate_push_endpoint("https://[fec0::5]/", deployed=True, allow_list=["fec0::/10"], resolve=no_dns)
