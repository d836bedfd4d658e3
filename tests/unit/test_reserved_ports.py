"""Push endpoints never reach Metro's own ports or its AWS emulator's, whatever the rules, the allow list or
the auth mode; keys mode brings the strict rules unless METRO_PUSH_STRICT=0 opts out (core/access/endpoints.py,
config.py, store/resolver.py, service/push_config.py, delivery/push_request.py)."""

from __future__ import annotations

import socket
import types
from collections.abc import Iterator, Sequence
from typing import cast

import pytest

from chalicelib.config import Config
from chalicelib.core.access.endpoints import Reserved, reserved_destinations, validate_push_endpoint
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.wire.models import PushConfig, Subscription
from chalicelib.delivery.push_request import http_poster
from chalicelib.service import push_config
from chalicelib.service.context import Context
from chalicelib.store.resolver import EndpointResolver
from chalicelib.store.workers import Workers

OWN = (8085, 8443, 4566)
DNS = {"localhost": ["127.0.0.1", "::1"], "moto.internal": ["10.0.0.5"], "push.example.com": ["93.184.216.34"]}
SUB = "projects/p/subscriptions/s"


def fake_resolve(host: str) -> list[str]:
    return DNS.get(host, [])


def check(url: str, reserved: Reserved, *, strict: bool, allow_list: Sequence[str] = ()) -> None:
    validate_push_endpoint(url, deployed=strict, allow_list=allow_list, resolve=fake_resolve, reserved=reserved)


def refused(url: str, reserved: Reserved, *, strict: bool, allow_list: Sequence[str] = ()) -> str:
    with pytest.raises(InvalidArgument) as info:
        check(url, reserved, strict=strict, allow_list=allow_list)
    return info.value.message


# -- the rule (core) -------------------------------------------------------------------------------------
LOCAL = reserved_destinations(OWN, "http://127.0.0.1:4566", deployed=False)


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:4566/moto-api/reset",  # the emulator: this wiped every tenant's data
    "http://localhost:4566/moto-api/reset",
    "http://[::1]:4566/",
    "http://[::ffff:127.0.0.1]:4566/",
    "http://0.0.0.0:4566/",
    "http://127.0.0.2:8085/v1/projects",  # the API
    "https://127.0.0.1:8443/v1/projects",  # the AMS dialect's endpoint
    "http://192.168.1.5:4566/",  # the local stack may listen on any interface
    "http://93.184.216.34:8085/",
])
def test_local_stack_ports_are_refused_on_every_address(url: str) -> None:
    for allow_list in ((), ("127.0.0.0/8", "::1", "0.0.0.0/0", "localhost")):
        assert "may never use it" in refused(url, LOCAL, strict=False, allow_list=allow_list)
    assert "may never use it" in refused(url.replace("http://", "https://"), LOCAL, strict=True,
                                         allow_list=("127.0.0.0/8", "192.168.0.0/16", "::1", "localhost"))


def test_a_host_that_does_not_resolve_yet_is_refused_on_those_ports() -> None:
    assert "may never use it" in refused("http://unresolved.example:4566/", LOCAL, strict=False)
    check("http://unresolved.example:4567/", LOCAL, strict=False)  # the local rules accept it: it may come up


def test_other_ports_stay_open_to_local_webhooks() -> None:
    for url in ("http://127.0.0.1:4567/", "http://localhost:8080/push", "http://[::1]:9000/"):
        check(url, LOCAL, strict=False)


def test_the_aws_endpoint_is_refused_by_host_and_port() -> None:
    external = reserved_destinations(OWN, "http://moto.internal:5000/", deployed=False)
    assert "AWS endpoint" in refused("http://moto.internal:5000/moto-api/reset", external, strict=False)
    for url in ("http://10.0.0.5:5000/", "http://127.0.0.1:5000/"):  # its port, on any address locally
        assert "may never use it" in refused(url, external, strict=False)
    deployed = reserved_destinations(OWN, "http://10.0.0.5:4566", deployed=True)
    for url in ("https://10.0.0.5:4566/", "https://[::ffff:10.0.0.5]:4566/", "https://moto.internal:4566/"):
        assert "may never use it" in refused(url, deployed, strict=True, allow_list=("10.0.0.0/8", "moto.internal"))


def test_deployed_the_ports_are_refused_where_the_allow_list_would_open_them() -> None:
    """Deployed, nothing of Metro listens on a public address: a public endpoint on port 8443 is someone
    else's server. On a non-public address (opened by the allow list) the ports stay refused."""
    deployed = reserved_destinations(OWN, None, deployed=True)
    check("https://push.example.com:8443/", deployed, strict=True)
    assert "may never use it" in refused("https://127.0.0.1:8443/", deployed, strict=True, allow_list=("127.0.0.1",))
    check("https://127.0.0.1:9443/", deployed, strict=True, allow_list=("127.0.0.1",))


# -- configuration -----------------------------------------------------------------------------------------
def test_keys_mode_brings_the_strict_rules_unless_opted_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("METRO_PUSH_STRICT", raising=False)
    monkeypatch.delenv("METRO_MODE", raising=False)
    for auth, strict in (("keys", True), ("open", False)):
        monkeypatch.setenv("METRO_AUTH", auth)
        assert Config().push_strict is strict
    monkeypatch.setenv("METRO_AUTH", "keys")
    for value, strict in (("0", False), ("false", False), ("1", True), ("", True)):
        monkeypatch.setenv("METRO_PUSH_STRICT", value)
        assert Config().push_strict is strict
    monkeypatch.setenv("METRO_AUTH", "open")
    monkeypatch.setenv("METRO_PUSH_STRICT", "1")
    assert Config().push_strict is True


def test_own_ports_come_from_the_local_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("METRO_PORT", "METRO_AMS_PORT", "METRO_EMULATOR_PORT"):
        monkeypatch.delenv(name, raising=False)
    assert Config().own_ports == OWN
    monkeypatch.setenv("METRO_EMULATOR_PORT", "4999")
    assert Config().own_ports == (8085, 8443, 4999)


# -- at create, patch and modifyPushConfig (service) ---------------------------------------------------------
def validate(config: Config, url: str) -> None:
    ctx = cast(Context, types.SimpleNamespace(config=config, resolver=EndpointResolver(config, Workers())))
    push_config.validate(ctx, Subscription(name=SUB, push_config=PushConfig(push_endpoint=url)))


def keys_config(monkeypatch: pytest.MonkeyPatch, strict: str | None) -> Config:
    monkeypatch.setenv("METRO_AUTH", "keys")
    monkeypatch.delenv("METRO_MODE", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("METRO_PUSH_ALLOW_LIST", raising=False)
    if strict is None:
        monkeypatch.delenv("METRO_PUSH_STRICT", raising=False)
    else:
        monkeypatch.setenv("METRO_PUSH_STRICT", strict)
    monkeypatch.setenv("METRO_EMULATOR_PORT", "4566")
    return Config()


def test_keys_mode_refuses_loopback_webhooks_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    config = keys_config(monkeypatch, None)
    for url in ("http://127.0.0.1:9999/hook", "https://127.0.0.1:9999/hook", "http://127.0.0.1:4566/moto-api/reset"):
        with pytest.raises(InvalidArgument):
            validate(config, url)


def test_the_opt_out_allows_loopback_webhooks_but_never_the_emulator(monkeypatch: pytest.MonkeyPatch) -> None:
    config = keys_config(monkeypatch, "0")
    validate(config, "http://127.0.0.1:9999/hook")
    for url in ("http://127.0.0.1:4566/moto-api/reset", "http://localhost:8085/", "https://127.0.0.1:8443/"):
        with pytest.raises(InvalidArgument, match="may never use it"):
            validate(config, url)


# -- at delivery: no connection is made ----------------------------------------------------------------------
@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)  # a guard only: every accept below has a connection waiting
    yield server
    server.close()


def test_a_push_to_a_reserved_port_makes_no_connection(listener: socket.socket,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A subscription stored before the rule (or any other way past validation) still reaches nothing: the
    first connection the listener sees is the test's own, made after the push gave up."""
    port = int(listener.getsockname()[1])
    monkeypatch.setenv("METRO_AUTH", "open")
    monkeypatch.setenv("METRO_PUSH_STRICT", "0")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("METRO_EMULATOR_PORT", str(port))
    url = f"http://127.0.0.1:{port}/moto-api/reset"
    resolver = EndpointResolver(Config(), Workers())
    assert http_poster(resolver)(url, b"{}", {}, 5.0) is None
    assert not push_config.endpoint_allowed(resolver, url)
    with socket.create_connection(("127.0.0.1", port)) as own:
        conn, peer = listener.accept()
        conn.close()
        assert peer[1] == own.getsockname()[1]
