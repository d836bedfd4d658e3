"""AMS's push endpoint verification: GET ``{scheme}://{host[:port]}/ams_verification_hash`` of a push
endpoint, connecting only to the addresses the endpoint rules checked (core/endpoints.py)."""

from __future__ import annotations

import http.client
import socket
import ssl

from chalicelib.config import Config
from chalicelib.core.ams import VERIFICATION_PATH
from chalicelib.core.endpoints import parse_push_endpoint
from chalicelib.store.resolver import check_endpoint

MAX_ANSWER_BYTES = 4096


def verification_url(push_endpoint: str) -> str:
    endpoint = parse_push_endpoint(push_endpoint)
    return f"{endpoint.scheme}://{endpoint.host_header}{VERIFICATION_PATH}"


def fetch_verification_hash(config: Config, push_endpoint: str, timeout: float = 5.0) -> tuple[int, str]:
    """(status, body) of the endpoint's verification route; (0, reason) when it could not be reached."""
    target = check_endpoint(config, verification_url(push_endpoint), timeout)
    endpoint = target.endpoint
    for address in target.addresses:
        try:
            sock = socket.create_connection((str(address), endpoint.port), timeout=timeout)
        except OSError:
            continue
        if endpoint.scheme == "https":
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=endpoint.host)
        conn = http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=timeout)
        conn.sock = sock
        try:
            conn.request("GET", VERIFICATION_PATH, headers={"Host": endpoint.host_header})
            answer = conn.getresponse()
            return answer.status, answer.read(MAX_ANSWER_BYTES).decode("utf-8", "replace").strip()
        except (OSError, http.client.HTTPException) as exc:
            return 0, type(exc).__name__
        finally:
            conn.close()
    return 0, f"no address of {endpoint.host} answered"
