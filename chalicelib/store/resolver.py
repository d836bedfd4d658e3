"""DNS for push endpoints: resolution with a deadline, the endpoint check with the configured rules, and the
checked-target cache.

``getaddrinfo`` blocks and has no timeout of its own, so lookups run on the context's workers
(store/workers.py) and the caller waits at most ``timeout`` seconds (then ``TimeoutError``, which
core/access/endpoints.py turns into INVALID_ARGUMENT). A lookup that hangs keeps one worker busy, never the
caller; at most ``MAX_LOOKUPS`` run at once, so hanging lookups cannot take every worker.

:meth:`EndpointResolver.checked` parses, resolves and checks an endpoint, remembers a successful result
for a minute (bounded), and refuses Metro's own ports. The checked HTTP client (store/http_client.py)
connects only to the addresses of that result, so a DNS answer that changes after the check (rebinding)
is never used.
"""

from __future__ import annotations

import concurrent.futures as cf
import socket
import threading
import time
from collections import OrderedDict

from chalicelib.config import Config
from chalicelib.core.access.endpoints import (
    Reserved,
    Resolve,
    Target,
    check_target,
    parse_push_endpoint,
    refuse_reserved,
    reserved_destinations,
)
from chalicelib.store.workers import Workers

TARGET_TTL = 60.0
MAX_TARGETS = 1024
MAX_LOOKUPS = 4  # lookups in flight at once


def _getaddrinfo(host: str) -> list[str]:
    addresses: list[str] = []
    for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP):
        address = str(info[4][0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def strict_rules(config: Config) -> bool:
    """Whether the deployed push rules apply (deployed, or METRO_PUSH_STRICT locally)."""
    return config.deployed or config.push_strict


def reserved(config: Config) -> Reserved:
    """What no push may reach: Metro's own ports and its AWS emulator's (core/access/endpoints.Reserved)."""
    return reserved_destinations(config.own_ports, config.endpoint_url, deployed=config.deployed)


class EndpointResolver:
    def __init__(self, config: Config, workers: Workers) -> None:
        self.config = config
        self._workers = workers
        self._slots = threading.BoundedSemaphore(MAX_LOOKUPS)
        self._targets: OrderedDict[str, tuple[float, Target]] = OrderedDict()
        self._lock = threading.Lock()

    def resolve(self, host: str, timeout: float) -> list[str]:
        """The IP addresses ``host`` resolves to, without duplicates; TimeoutError after ``timeout`` seconds."""
        deadline = time.monotonic() + max(0.0, timeout)
        if not self._slots.acquire(timeout=max(0.0, timeout)):
            raise TimeoutError(f"resolving {host!r}: {MAX_LOOKUPS} lookups are still waiting for answers")

        def lookup() -> list[str]:
            try:
                return _getaddrinfo(host)
            finally:
                self._slots.release()

        try:
            future = self._workers.submit(lookup)
        except BaseException:
            self._slots.release()
            raise
        try:
            return future.result(timeout=max(0.0, deadline - time.monotonic()))
        except cf.TimeoutError:
            if future.cancel():  # it never started: its slot is free again
                self._slots.release()
            raise TimeoutError(f"resolving {host!r} took longer than {timeout:g}s") from None

    def resolver(self, timeout: float | None = None) -> Resolve:
        """Resolution within the configured DNS timeout (and within ``timeout``, when given)."""
        limit = self.config.push_dns_timeout_seconds
        wait = limit if timeout is None else min(timeout, limit)
        return lambda host: self.resolve(host, wait)

    def check(self, url: str, timeout: float | None = None) -> Target:
        """Parse, resolve and check ``url`` now (InvalidArgument when Metro may not push to it)."""
        return check_target(parse_push_endpoint(url), deployed=strict_rules(self.config),
                            allow_list=self.config.push_allow_list, resolve=self.resolver(timeout))

    def target(self, url: str, timeout: float | None = None) -> Target:
        """:meth:`check`, remembered for a minute when it found addresses."""
        now = time.monotonic()
        with self._lock:
            cached = self._targets.get(url)
        if cached is not None and cached[0] > now:
            return cached[1]
        target = self.check(url, timeout)
        if target.addresses:
            with self._lock:
                self._targets[url] = (now + TARGET_TTL, target)
                self._targets.move_to_end(url)
                while len(self._targets) > MAX_TARGETS:
                    self._targets.popitem(last=False)
        return target

    def checked(self, url: str, timeout: float | None = None) -> Target:
        """The target a connection may use: :meth:`target`, never one of Metro's own ports (InvalidArgument)."""
        return refuse_reserved(self.target(url, timeout), reserved(self.config))
