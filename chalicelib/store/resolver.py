"""DNS for push endpoints: resolution with a deadline, and the checked-target cache.

``getaddrinfo`` blocks and has no timeout of its own, so lookups run on a small pool of worker
threads and the caller waits at most ``timeout`` seconds (then ``TimeoutError``, which
core/endpoints.py turns into INVALID_ARGUMENT). A lookup that hangs keeps one worker busy, never
the caller; the pool is bounded, so hanging lookups cannot pile up threads.

:func:`endpoint_target` parses, resolves and checks an endpoint with the configured rules and
remembers a successful result for a minute (bounded). Delivery connects only to the addresses of
that result (chalicelib/delivery/net.py), so a DNS answer that changes after the check
(rebinding) is never used.
"""

from __future__ import annotations

import concurrent.futures as cf
import socket
import threading
import time
from collections import OrderedDict

from chalicelib.config import Config
from chalicelib.core.endpoints import Resolve, Target, check_target, parse_push_endpoint

TARGET_TTL = 60.0
MAX_TARGETS = 1024
_WORKERS = cf.ThreadPoolExecutor(max_workers=4, thread_name_prefix="metro-dns")
_TARGETS: OrderedDict[tuple[str, bool, tuple[str, ...]], tuple[float, Target]] = OrderedDict()
_LOCK = threading.Lock()


def _getaddrinfo(host: str) -> list[str]:
    addresses: list[str] = []
    for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP):
        address = str(info[4][0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def resolve(host: str, timeout: float) -> list[str]:
    """The IP addresses ``host`` resolves to, without duplicates; TimeoutError after ``timeout`` seconds."""
    future = _WORKERS.submit(_getaddrinfo, host)
    try:
        return future.result(timeout=max(0.0, timeout))
    except cf.TimeoutError:
        future.cancel()
        raise TimeoutError(f"resolving {host!r} took longer than {timeout:g}s") from None


def strict_rules(config: Config) -> bool:
    """Whether the deployed push rules apply (deployed, or METRO_PUSH_STRICT locally)."""
    return config.deployed or config.push_strict


def dns_resolver(config: Config, timeout: float | None = None) -> Resolve:
    """Resolution within the configured DNS timeout (and within ``timeout``, when given)."""
    wait = config.push_dns_timeout_seconds if timeout is None else min(timeout, config.push_dns_timeout_seconds)
    return lambda host: resolve(host, wait)


def check_endpoint(config: Config, url: str, timeout: float | None = None) -> Target:
    """Parse, resolve and check ``url`` now (InvalidArgument when Metro may not push to it)."""
    return check_target(parse_push_endpoint(url), deployed=strict_rules(config), allow_list=config.push_allow_list,
                        resolve=dns_resolver(config, timeout))


def endpoint_target(config: Config, url: str, timeout: float | None = None) -> Target:
    """:func:`check_endpoint`, remembered for a minute when it found addresses."""
    key = (url, strict_rules(config), config.push_allow_list)
    now = time.monotonic()
    with _LOCK:
        cached = _TARGETS.get(key)
    if cached is not None and cached[0] > now:
        return cached[1]
    target = check_endpoint(config, url, timeout)
    if target.addresses:
        with _LOCK:
            _TARGETS[key] = (now + TARGET_TTL, target)
            _TARGETS.move_to_end(key)
            while len(_TARGETS) > MAX_TARGETS:
                _TARGETS.popitem(last=False)
    return target
