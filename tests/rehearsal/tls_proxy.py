"""A TLS-terminating forwarding proxy on 127.0.0.1 for the rehearsal's AMS stage.

argo-ams-library calls ``https://{host[:port]}/v1/...``: https only, no path prefix. On an emulator the AMS
stage is served at a path-style http URL (``{emulator}/_aws/execute-api/{api id}/{stage}``), so this proxy
answers https with a self-signed certificate (the one ``make run`` makes for its AMS endpoint:
chalicelib/local/tls.py) and forwards every request to that URL with the path prefixed, the method, headers
and body unchanged. It stands in for the custom domain a real deployment puts in front of the AMS API.
"""

from __future__ import annotations

import http.client
import ssl
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from chalicelib.local.tls import ensure_certificate

# Headers of one connection (RFC 9110 section 7.6.1), never forwarded; the proxy sets its own lengths.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                        "trailer", "transfer-encoding", "upgrade", "content-length"})
UPSTREAM_TIMEOUT = 60


class TlsProxy(ThreadingHTTPServer):
    """Serves https on 127.0.0.1 (a free port) and forwards to ``upstream`` (``http://host:port/prefix``)."""

    daemon_threads = True

    def __init__(self, upstream: str, cert_dir: Path) -> None:
        super().__init__(("127.0.0.1", 0), _ForwardingHandler)
        self.upstream = urllib.parse.urlsplit(upstream.rstrip("/"))
        self.cert, key = ensure_certificate(cert_dir)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(self.cert), str(key))
        # The handshake happens in the connection's own thread, so a slow client cannot hold up accept().
        self.socket = context.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)
        self._thread = threading.Thread(target=self.serve_forever, name="rehearsal-tls-proxy", daemon=True)

    @property
    def host(self) -> str:
        """``127.0.0.1:port``: what argo-ams-library takes as its endpoint."""
        return f"127.0.0.1:{self.server_address[1]}"

    def start(self) -> TlsProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=10)


class _ForwardingHandler(BaseHTTPRequestHandler):
    server: TlsProxy

    def _forward(self) -> None:
        upstream = self.server.upstream
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "host"}
        headers["Host"] = upstream.netloc
        connection = http.client.HTTPConnection(upstream.netloc, timeout=UPSTREAM_TIMEOUT)
        try:
            connection.request(self.command, upstream.path + self.path, body=body, headers=headers)
            answer = connection.getresponse()
            payload = answer.read()
        finally:
            connection.close()
        self.send_response_only(answer.status, answer.reason)  # the upstream's Date and Server, not ours
        for name, value in answer.getheaders():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _forward

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: pytest shows the failing test's calls, not every forwarded request."""
