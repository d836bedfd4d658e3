"""Where the CLI finds Metro: flags, then ``METRO_URL``/``METRO_TOKEN``/``METRO_PROJECT``, then the config file
``metro login`` writes (``~/.config/metro/config.json``, 0600; ``METRO_CONFIG`` moves it), then the defaults
(``http://127.0.0.1:$METRO_PORT``, port 8085, no token, no project)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

KEYS = ("url", "token", "project")
ENVIRONMENT = {"url": "METRO_URL", "token": "METRO_TOKEN", "project": "METRO_PROJECT"}
FILE_MODE = 0o600
DIR_MODE = 0o700


class ConfigError(Exception):
    """The config file cannot be read or written."""


@dataclass(frozen=True)
class Settings:
    url: str
    token: str | None = None
    project: str | None = None


def default_url(environ: Mapping[str, str]) -> str:
    return f"http://127.0.0.1:{environ.get('METRO_PORT') or '8085'}"


def config_path(environ: Mapping[str, str]) -> Path:
    if environ.get("METRO_CONFIG"):
        return Path(environ["METRO_CONFIG"]).expanduser()
    base = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".config")
    return Path(base) / "metro" / "config.json"


def read_config(path: Path) -> dict[str, str]:
    """The stored settings; {} when there is no file."""
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot read {path}: {e}") from e
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} is not a JSON object")
    return {k: str(v) for k, v in raw.items() if k in KEYS and v not in (None, "")}


def write_config(path: Path, values: Mapping[str, str | None]) -> None:
    """Store ``values`` (a token among them) readable by the owner only: the file is created 0600, and an
    existing one is set back to 0600 before it is replaced."""
    data = {k: v for k, v in values.items() if k in KEYS and v}
    try:
        path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with os.fdopen(fd, "w") as out:
            os.fchmod(out.fileno(), FILE_MODE)
            out.write(json.dumps(data, indent=2) + "\n")
        os.replace(temporary, path)
    except OSError as e:
        raise ConfigError(f"cannot write {path}: {e}") from e


def resolve(environ: Mapping[str, str], flags: Mapping[str, str | None]) -> Settings:
    """Flags win over the environment, which wins over the config file, which wins over the defaults."""
    stored = read_config(config_path(environ))
    found: dict[str, str | None] = {}
    for key in KEYS:
        found[key] = flags.get(key) or environ.get(ENVIRONMENT[key]) or stored.get(key) or None
    return Settings(url=found["url"] or default_url(environ), token=found["token"], project=found["project"])
