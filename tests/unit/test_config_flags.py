"""Boolean settings are read one way (config.flag): 1/0, true/false, yes/no, on/off in any case; anything else
refuses to start with the variable's name. Before, METRO_DIRECT_FANOUT=False read as true."""

from __future__ import annotations

import pytest

from chalicelib import config
from chalicelib.config import Config, LocalConfig


@pytest.mark.parametrize(("raw", "expected"), [
    ("1", True), ("true", True), ("True", True), ("YES", True), ("on", True), (" On ", True),
    ("0", False), ("false", False), ("False", False), ("FALSE", False), ("no", False), ("Off", False),
])
def test_every_switch_reads_the_same_words(monkeypatch: pytest.MonkeyPatch, raw: str, expected: bool) -> None:
    monkeypatch.setenv("METRO_DIRECT_FANOUT", raw)
    monkeypatch.setenv("METRO_PUSH_STRICT", raw)
    monkeypatch.setenv("METRO_MOTO_SPEEDUP", raw)
    cfg, local = Config(), LocalConfig()
    assert (cfg.direct_fanout, cfg.push_strict, local.moto_speedup) == (expected, expected, expected)


def test_unset_or_empty_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("METRO_DIRECT_FANOUT", "METRO_MOTO_SPEEDUP", "METRO_PUSH_STRICT", "METRO_AUTH", "METRO_MODE"):
        monkeypatch.delenv(name, raising=False)
    assert Config().direct_fanout and LocalConfig().moto_speedup and not Config().push_strict
    monkeypatch.setenv("METRO_DIRECT_FANOUT", "")
    assert Config().direct_fanout
    monkeypatch.setenv("METRO_AUTH", "keys")
    monkeypatch.setenv("METRO_PUSH_STRICT", " ")
    assert Config().push_strict  # keys mode brings the strict rules unless they are switched off


@pytest.mark.parametrize("raw", ["2", "enabled", "y", "n", "none", "tru", "0x1", "-1"])
def test_anything_else_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("METRO_DIRECT_FANOUT", raw)
    with pytest.raises(ValueError, match=f"METRO_DIRECT_FANOUT must be one of .* not {raw!r}"):
        Config()
    monkeypatch.delenv("METRO_DIRECT_FANOUT")
    with pytest.raises(ValueError, match="METRO_SOME_SWITCH"):
        monkeypatch.setenv("METRO_SOME_SWITCH", raw)
        config.flag("METRO_SOME_SWITCH", False)
