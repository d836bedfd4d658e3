"""Whether something listens at a URL (is the AWS emulator there already?)."""

from __future__ import annotations

import socket
from urllib.parse import urlparse


def listening(url: str, timeout: float = 0.5) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 80), timeout=timeout):
            return True
    except OSError:
        return False
