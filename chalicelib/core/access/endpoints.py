"""Push endpoint safety: which ``pushConfig.pushEndpoint`` URLs Metro will deliver to (pure).

The URL is parsed once, here, into an :class:`Endpoint` (scheme, host, port, request target); the
push client sends the request to exactly that host, port and target and never parses the URL again.
The parser is strict so that no other reading of the same text can disagree with it: an absolute
``http``/``https`` URL with ``//`` and a host; no userinfo (``@`` in the authority), no backslash,
no whitespace or control characters; a host that is an IP literal (dotted-quad IPv4 or bracketed
IPv6) or a DNS name of letters, digits, ``-`` and ``_`` (non-ASCII names are IDNA-encoded; a
numeric or hex last label, as in ``2130706433`` or ``0x7f.1``, is refused); a decimal port 1-65535.
The fragment is never sent; non-ASCII characters of the path and query are percent-encoded.

Address rules, with ``strict=True`` (deployed, keys mode, or ``METRO_PUSH_STRICT=1``):

* the scheme must be ``https``;
* every address of the host must be global (``ipaddress``' ``is_global``): loopback, private,
  shared (100.64/10), benchmarking (198.18/15), IETF (192.0.0/24), link-local (with the instance
  metadata service 169.254.169.254), unspecified, multicast, reserved and Teredo (2001::/32) are
  refused, as is the local-use NAT64 prefix 64:ff9b:1::/48; an IPv4 address embedded in IPv6
  (IPv4-mapped, IPv4-translated, IPv4-compatible, NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo,
  ISATAP) is checked as itself;
* ranges ``is_global`` misses are refused too: an IPv6 address must be global unicast (2000::/3),
  IPv4-mapped or NAT64 64:ff9b::/96, which leaves out site-local fec0::/10, SRv6 5f00::/16, the
  dummy prefix 100:0:0:1::/64 and IPv4-compatible ::/96; 3fff::/20 (documentation) is refused;
* a host that does not resolve is refused;
* an operator ``allow_list`` of hostnames (exact, case-insensitive) and CIDRs lifts the address
  rule: an allowed hostname may resolve to anything, otherwise each refused address must lie in an
  allowed network.

Without ``strict`` plain ``http``, loopback, private and unspecified addresses are allowed, and a
host that does not resolve is accepted (it may come up later); link-local and multicast addresses
(also embedded ones) are still refused unless allowed.

Whatever the rules and the allow list, :func:`refuse_reserved` keeps pushes off Metro's own ports and
its AWS emulator's (:class:`Reserved`).

Resolution is injected (``resolve(host) -> [address text]``; chalicelib/store/resolver.py does it
with a deadline). A resolver that raises ``TimeoutError`` makes the endpoint invalid in both modes.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from chalicelib.core.errors import InvalidArgument

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolve = Callable[[str], list[str]]

MAX_URL_LENGTH = 2048
DEFAULT_PORTS = {"http": 80, "https": 443}

_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<authority>[^/?#]*)(?P<target>[^#]*)(?:#.*)?$", re.S)
_AUTHORITY = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+(?:%25[A-Za-z0-9._~-]+)?)\]|(?P<name>[^:\[\]]+))"
                        r"(?::(?P<port>[0-9]{1,5}))?$")
_DOTTED_QUAD = re.compile(r"^[0-9]{1,3}(?:\.[0-9]{1,3}){3}\Z")
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)\Z")
_NUMERIC_LABEL = re.compile(r"^(?:[0-9]+|0x[0-9a-f]*)\Z")
_TARGET_SAFE = "!#$%&'()*+,/:;=?@[]~"  # RFC 3986 reserved characters and '%'; others are percent-encoded
_BAD_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"}

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_COMPATIBLE = ipaddress.IPv6Network("::/96")
_TEREDO = ipaddress.IPv6Network("2001::/32")
_ISATAP_IDS = (0x00005EFE, 0x02005EFE)  # the interface identifier's upper half carrying an IPv4 address
# Strict rules: IPv6 outside global unicast is refused unless it carries an IPv4 address checked as itself.
_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_CARRIERS = (ipaddress.IPv6Network("::ffff:0:0/96"), _NAT64)
# Inside 2000::/3, not global, and missed by ipaddress on some Python versions.
_NOT_GLOBAL = ((ipaddress.IPv6Network("3fff::/20"), "documentation"),)

# (network, reason, refused without strict rules too)
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
        ("fec0::/10", "site-local", False),
        ("169.254.0.0/16", "link-local", True),
        ("fe80::/10", "link-local", True),
        ("224.0.0.0/4", "multicast", True),
        ("ff00::/8", "multicast", True),
        ("240.0.0.0/4", "reserved", False),
    )
)


@dataclass(frozen=True)
class Endpoint:
    """A push endpoint URL as Metro reads it; the request goes to exactly these parts."""

    url: str
    scheme: str
    host: str  # the IDNA (ASCII) host name, or the IP literal's text
    port: int
    target: str  # path and query, as sent in the request line
    literal: Address | None = None

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if self.literal is not None and self.literal.version == 6 else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"


@dataclass(frozen=True)
class Target:
    """An endpoint and the addresses it was checked with: the only addresses a push may connect to."""

    endpoint: Endpoint
    addresses: tuple[Address, ...]

    def is_checked_peer(self, peer: str) -> bool:
        """Whether a connected socket's peer address is one of the checked addresses."""
        address = parse_address(peer.split("%", 1)[0])
        return address is not None and any(address == _unscoped(a) for a in self.addresses)


def _invalid(url: str, why: str) -> InvalidArgument:
    return InvalidArgument(f"Invalid push endpoint {url[:200]!r}: {why}.")


def parse_address(text: str) -> Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _unscoped(address: Address) -> Address:
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        return ipaddress.IPv6Address(int(address))
    return address


def _check_characters(url: str) -> None:
    if not url:
        raise _invalid(url, "it must be a non-empty URL")
    if len(url) > MAX_URL_LENGTH:
        raise _invalid(url, f"it is longer than {MAX_URL_LENGTH} characters")
    for ch in url:
        if ch == "\\":
            raise _invalid(url, "backslashes are not allowed")
        if ord(ch) < 0x80 and (ord(ch) <= 0x20 or ord(ch) == 0x7F):
            raise _invalid(url, "it must be a URL without whitespace or control characters")
        if ord(ch) >= 0x80 and unicodedata.category(ch) in _BAD_CATEGORIES:
            raise _invalid(url, "it must be a URL without whitespace, control or format characters")


def _host_name(name: str, url: str) -> str:
    host = name.lower().rstrip(".")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise _invalid(url, "the host is not a valid domain name") from None
    labels = host.split(".")
    if not all(_LABEL.match(label) for label in labels):
        raise _invalid(url, "the host is not a valid domain name")
    if _NUMERIC_LABEL.match(labels[-1]):
        raise _invalid(url, "the host is neither a valid domain name nor a dotted-quad IPv4 address")
    return host


def _parse_host(authority: str, url: str) -> tuple[str, Address | None, str | None]:
    """(host, IP literal or None, port text or None) of the URL's authority."""
    if "@" in authority:
        raise _invalid(url, "user information ('@' before the host) is not allowed")
    match = _AUTHORITY.match(authority)
    if match is None:
        raise _invalid(url, "the host or port is not valid")
    port = match.group("port")
    if match.group("v6") is not None:
        literal = parse_address(match.group("v6").replace("%25", "%", 1))
        if not isinstance(literal, ipaddress.IPv6Address):
            raise _invalid(url, "the bracketed host is not an IPv6 address")
        return str(literal), literal, port
    name = match.group("name")
    if _DOTTED_QUAD.match(name):
        literal = parse_address(name)
        if literal is None:
            raise _invalid(url, "the host is not a valid IPv4 address")
        return str(literal), literal, port
    return _host_name(name, url), None, port


def parse_push_endpoint(url: str) -> Endpoint:
    """The one reading of a push endpoint URL; InvalidArgument for anything ambiguous or malformed."""
    _check_characters(url)
    match = _URL.match(url)
    if match is None:
        raise _invalid(url, "it must be an absolute http or https URL")
    scheme = match.group("scheme").lower()
    if scheme not in DEFAULT_PORTS:
        raise _invalid(url, "it must be an absolute http or https URL")
    if not match.group("authority"):
        raise _invalid(url, "the URL has no host")
    host, literal, port_text = _parse_host(match.group("authority"), url)
    port = int(port_text) if port_text is not None else DEFAULT_PORTS[scheme]
    if not 1 <= port <= 65535:
        raise _invalid(url, f"port {port} is not a valid port")
    target = match.group("target")
    target = quote(target if target.startswith("/") else "/" + target, safe=_TARGET_SAFE)
    return Endpoint(url, scheme, host, port, target, literal)


# -- addresses ------------------------------------------------------------------------------------
def _embedded_ipv4(address: Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, translated, compatible, NAT64, ISATAP, 6to4, Teredo)."""
    if isinstance(address, ipaddress.IPv4Address):
        return []
    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]
    inner: list[ipaddress.IPv4Address] = []
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if any(address in net for net in (_TRANSLATED, _COMPATIBLE, _NAT64, _NAT64_LOCAL)) \
            or (int(address) >> 32) & 0xFFFFFFFF in _ISATAP_IDS:
        inner.append(low32)
    if address.sixtofour is not None:
        inner.append(address.sixtofour)
    if address.teredo is not None:
        inner.extend(address.teredo)
    return inner


def _strict_reason(address: Address) -> str | None:
    """Why only the strict rules refuse ``address`` (its embedded IPv4 addresses passed)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address in _NAT64_LOCAL:
            return "local NAT64"
        if address not in _GLOBAL_UNICAST and not any(address in net for net in _CARRIERS):
            return "non-public"
        for network, reason in _NOT_GLOBAL:
            if address in network:
                return reason
    return None if address.is_global else "non-public"


def refusal_reason(address: Address, *, deployed: bool) -> str | None:
    """Why ``address`` may not be pushed to (e.g. ``"loopback"``), or None when it may.

    ``deployed`` means the strict rules (deployed mode, keys mode, or ``METRO_PUSH_STRICT``).
    """
    address = _unscoped(address)
    for network, reason, local in _REFUSED:
        if address.version == network.version and address in network and (deployed or local):
            return reason
    if deployed and address.version == 6 and address in _TEREDO:
        return "Teredo"
    for inner in _embedded_ipv4(address):
        inner_reason = refusal_reason(inner, deployed=deployed)
        if inner_reason is not None:
            return inner_reason
    return _strict_reason(address) if deployed else None


def _allowed(host: str, address: Address, allow_list: Sequence[str]) -> bool:
    for raw in allow_list:
        entry = raw.strip().lower()
        if not entry:
            continue
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            if entry.rstrip(".") == host:
                return True
            continue
        if address.version == network.version and _unscoped(address) in network:
            return True
    return False


def _resolved(endpoint: Endpoint, deployed: bool, resolve: Resolve) -> tuple[Address, ...]:
    if endpoint.literal is not None:
        return (endpoint.literal,)
    try:
        texts = resolve(endpoint.host)
    except TimeoutError:
        raise _invalid(endpoint.url, f"the host {endpoint.host!r} could not be resolved in time") from None
    except (OSError, UnicodeError, ValueError):
        texts = []
    addresses = tuple(a for a in (parse_address(text) for text in texts) if a is not None)
    if not addresses and deployed:
        raise _invalid(endpoint.url, f"the host {endpoint.host!r} does not resolve")
    return addresses


def check_target(endpoint: Endpoint, *, deployed: bool, allow_list: Sequence[str], resolve: Resolve,
                 reserved: Reserved | None = None) -> Target:
    """Resolve and check a parsed endpoint; the Target holds the addresses a push may connect to."""
    if deployed and endpoint.scheme != "https":
        raise _invalid(endpoint.url, "push endpoints must use https")
    addresses = _resolved(endpoint, deployed, resolve)
    if reserved is not None:
        refuse_reserved(Target(endpoint, addresses), reserved)
    for address in addresses:
        reason = refusal_reason(address, deployed=deployed)
        if reason is not None and not _allowed(endpoint.host, address, allow_list):
            shown = endpoint.host if endpoint.literal is not None else f"{endpoint.host!r} ({address})"
            raise _invalid(endpoint.url, f"the host {shown} is a {reason} address; push endpoints must be "
                                         "publicly routable (or allowed by the operator)")
    return Target(endpoint, addresses)


def validate_push_endpoint(url: str, *, deployed: bool, allow_list: Sequence[str], resolve: Resolve,
                           reserved: Reserved | None = None) -> Target:
    """Raise InvalidArgument unless Metro may push to ``url`` (see the module docstring)."""
    return check_target(parse_push_endpoint(url), deployed=deployed, allow_list=allow_list, resolve=resolve,
                        reserved=reserved)


# -- Metro's own ports ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reserved:
    """What no push may reach, whatever the rules and the allow list: the ports Metro and its AWS emulator
    listen on (``ports``) and the AWS endpoint (``hosts``, pairs of host and port).

    ``ports`` are refused on every address when ``everywhere`` (the local stack, which may listen on any of
    the machine's interfaces); deployed, where none of Metro listens, on every address the strict rules
    refuse (so the allow list cannot open them).
    """

    ports: frozenset[int] = frozenset()
    hosts: frozenset[tuple[str, int]] = frozenset()
    everywhere: bool = True


def _host_key(host: str) -> str:
    literal = parse_address(host.split("%", 1)[0])
    return str(literal) if literal is not None else host.lower().rstrip(".")


def reserved_destinations(own_ports: Iterable[int], aws_endpoint_url: str | None, *, deployed: bool) -> Reserved:
    """The :class:`Reserved` of a Metro listening on ``own_ports`` and calling AWS at ``aws_endpoint_url``."""
    ports, hosts = set(own_ports), set()
    if aws_endpoint_url:
        parts = urlsplit(aws_endpoint_url.strip())
        try:
            port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower(), 443)
        except ValueError:
            port = None
        if parts.hostname and port:
            hosts.add((_host_key(parts.hostname), port))
            if not deployed:
                ports.add(port)
    return Reserved(frozenset(ports), frozenset(hosts), everywhere=not deployed)


def _reserved_reason(target: Target, reserved: Reserved) -> str | None:
    port, addresses = target.endpoint.port, [_unscoped(a) for a in target.addresses]
    names = {target.endpoint.host, *(str(a) for a in addresses)}
    names.update(str(a.ipv4_mapped) for a in addresses if isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped)
    if any((name, port) in reserved.hosts for name in names):
        return "Metro's AWS endpoint"
    if port in reserved.ports and (reserved.everywhere or not addresses
                                   or any(refusal_reason(a, deployed=True) for a in addresses)):
        return "a port of Metro or of its AWS emulator"
    return None


def refuse_reserved(target: Target, reserved: Reserved) -> Target:
    """``target``, unless it is one of Metro's own ports or its AWS endpoint (InvalidArgument)."""
    reason = _reserved_reason(target, reserved)
    if reason is not None:
        endpoint = target.endpoint
        raise _invalid(endpoint.url, f"{endpoint.host}:{endpoint.port} is {reason}; push endpoints may never use it")
    return target
