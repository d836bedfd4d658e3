"""Push endpoint safety: which ``pushConfig.pushEndpoint`` URLs Metro will deliver to.

Every endpoint must be an absolute ``http``/``https`` URL with a host. When deployed:

* the scheme must be ``https``;
* the host is resolved (IP literals are taken as they are) and every address must be
  public: loopback, private (incl. shared 100.64/10), link-local (incl. the instance
  metadata service 169.254.169.254), unspecified, multicast and reserved addresses are
  refused, also when embedded in IPv6 (IPv4-mapped ``::ffff:a.b.c.d``, NAT64, 6to4);
* a host that does not resolve is refused;
* an operator ``allow_list`` of hostnames (exact, case-insensitive) and CIDRs lifts the
  address rule: an allowed hostname may resolve to anything, otherwise each refused address
  must lie in an allowed network.

In local mode (``deployed=False``) plain ``http``, loopback, private and unspecified
addresses are allowed, and a host that does not resolve is accepted (it may come up later);
link-local and multicast addresses are still refused unless allowed.

Resolution is injected so that the check is pure; callers should run it again at delivery
time (DNS answers can change between CreateSubscription and a push).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from chalicelib.core.errors import InvalidArgument

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")

# (network, reason, refused in local mode too)
_REFUSED: tuple[tuple[Network, str, bool], ...] = tuple(
    (ipaddress.ip_network(cidr), reason, local)
    for cidr, reason, local in (
        ("0.0.0.0/8", "unspecified", False),
        ("::/128", "unspecified", False),
        ("127.0.0.0/8", "loopback", False),
        ("::1/128", "loopback", False),
        ("10.0.0.0/8", "private", False),
        ("172.16.0.0/12", "private", False),
        ("192.168.0.0/16", "private", False),
        ("100.64.0.0/10", "private", False),
        ("fc00::/7", "private", False),
        ("169.254.0.0/16", "link-local", True),
        ("fe80::/10", "link-local", True),
        ("224.0.0.0/4", "multicast", True),
        ("ff00::/8", "multicast", True),
        ("240.0.0.0/4", "reserved", False),
    )
)


def default_resolver(host: str) -> list[str]:
    """The IP addresses ``host`` resolves to (``socket.getaddrinfo``), without duplicates."""
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    addresses: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def _embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def refusal_reason(address: Address, *, deployed: bool) -> str | None:
    """Why ``address`` may not be pushed to (e.g. ``"loopback"``), or None when it may."""
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        return refusal_reason(embedded, deployed=deployed)
    for network, reason, local in _REFUSED:
        if address.version == network.version and address in network and (deployed or local):
            return reason
    return None


def _parse_address(text: str) -> Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _normalize_host(host: str, url: str) -> str:
    host = host.rstrip(".")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise InvalidArgument(f"Invalid push endpoint {url!r}: the host is not a valid domain name.") from None
    if not all(_LABEL.match(label) for label in host.split(".")):
        raise InvalidArgument(f"Invalid push endpoint {url!r}: the host is not a valid domain name.")
    return host


def _allowed(host: str, address: Address, allow_list: Sequence[str]) -> bool:
    for entry in allow_list:
        entry = entry.strip().lower()
        if not entry:
            continue
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            if entry.rstrip(".") == host:
                return True
            continue
        if address.version == network.version and address in network:
            return True
    return False


def validate_push_endpoint(
    url: str, *, deployed: bool, allow_list: Sequence[str], resolve: Callable[[str], list[str]]
) -> None:
    """Raise InvalidArgument unless Metro may push to ``url`` (see the module docstring)."""
    if not url or any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        raise InvalidArgument(f"Invalid push endpoint {url!r}: it must be a non-empty URL without whitespace.")
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname
    except ValueError as exc:
        raise InvalidArgument(f"Invalid push endpoint {url!r}: {exc}.") from None
    if parts.scheme not in ("http", "https"):
        raise InvalidArgument(f"Invalid push endpoint {url!r}: it must be an absolute http or https URL.")
    if not host:
        raise InvalidArgument(f"Invalid push endpoint {url!r}: the URL has no host.")
    if port == 0:
        raise InvalidArgument(f"Invalid push endpoint {url!r}: port 0 is not a valid port.")
    if deployed and parts.scheme != "https":
        raise InvalidArgument(f"Invalid push endpoint {url!r}: push endpoints must use https.")

    literal = _parse_address(host)
    if literal is not None:
        addresses = [literal]
    else:
        host = _normalize_host(host, url)
        try:
            resolved = resolve(host)
        except (OSError, UnicodeError, ValueError):
            resolved = []
        addresses = [a for a in (_parse_address(text) for text in resolved) if a is not None]
        if not addresses:
            if deployed:
                raise InvalidArgument(f"Invalid push endpoint {url!r}: the host {host!r} does not resolve.")
            return

    for address in addresses:
        reason = refusal_reason(address, deployed=deployed)
        if reason is not None and not _allowed(host, address, allow_list):
            shown = host if literal is not None else f"{host!r} ({address})"
            raise InvalidArgument(
                f"Invalid push endpoint {url!r}: the host {shown} is a {reason} address; "
                "push endpoints must be publicly routable (or allowed by the operator)."
            )
