"""`metro`'s settings: the config file `metro login` writes (0600), and which source wins (flags, the
environment, the file, the defaults)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from chalicelib.cli import settings
from chalicelib.cli.settings import ConfigError, Settings


def test_defaults_are_the_local_stack_with_no_token(tmp_path: Path) -> None:
    env = {"METRO_CONFIG": str(tmp_path / "none.json")}
    assert settings.resolve(env, {}) == Settings("http://127.0.0.1:8085", None, None)
    assert settings.resolve({**env, "METRO_PORT": "9999"}, {}).url == "http://127.0.0.1:9999"


def test_flags_win_over_the_environment_which_wins_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    settings.write_config(path, {"url": "http://file:1", "token": "file-token", "project": "file-p"})
    env = {"METRO_CONFIG": str(path)}
    assert settings.resolve(env, {}) == Settings("http://file:1", "file-token", "file-p")
    env_wins = {**env, "METRO_URL": "http://env:2", "METRO_TOKEN": "env-token"}
    assert settings.resolve(env_wins, {}) == Settings("http://env:2", "env-token", "file-p")
    assert settings.resolve(env_wins, {"token": "flag", "project": "flag-p"}) == Settings("http://env:2", "flag",
                                                                                          "flag-p")


def test_the_config_file_is_0600_even_when_it_existed_readable(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "metro" / "config.json"
    settings.write_config(path, {"url": "http://x:1", "token": "secret", "project": None})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text()) == {"url": "http://x:1", "token": "secret"}
    path.chmod(0o644)
    settings.write_config(path, {"token": "other"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert settings.read_config(path) == {"token": "other"}


def test_the_config_path_honours_metro_config_then_xdg_then_home(tmp_path: Path) -> None:
    assert settings.config_path({"METRO_CONFIG": str(tmp_path / "c.json")}) == tmp_path / "c.json"
    assert settings.config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "metro" / "config.json"
    assert settings.config_path({"HOME": str(tmp_path)}) == tmp_path / ".config" / "metro" / "config.json"


def test_a_broken_config_file_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match=r"config\.json"):
        settings.read_config(path)
    path.write_text("[1]")
    with pytest.raises(ConfigError, match="not a JSON object"):
        settings.read_config(path)
