"""``/console``: Metro's web console, a page of vanilla JavaScript that calls Metro's own REST API (docs/console.md).

The page, its script and its style are files of this package (``page.html``, ``app.js``, ``app.css``; the
Lambda bundle carries chalicelib/ whole), served as three public routes. They carry no data: everything the
console shows comes from API calls that the script makes with the user's token (keys mode: kept in the
browser's sessionStorage, sent as ``x-api-key``, never in a URL). The Content-Security-Policy allows only this
origin: no inline script or style, no CDN, no fonts from elsewhere, so it works on a closed network.
"""

from __future__ import annotations

import functools
from pathlib import Path

from chalice.app import Request, Response

from chalicelib.api import permissions as P
from chalicelib.api.http import guarded
from chalicelib.api.methods import Method

HERE = Path(__file__).resolve().parent
# Only this origin: the page's own script and style and the API it calls; no frames, no form posts elsewhere.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "X-Frame-Options": "DENY", "Cache-Control": "no-cache"}
HTML, SCRIPT, STYLE = "text/html; charset=utf-8", "text/javascript; charset=utf-8", "text/css; charset=utf-8"


@functools.cache
def asset(name: str) -> str:
    return (HERE / name).read_text(encoding="utf-8")


def _serve(name: str, content_type: str) -> Response:
    return guarded(lambda: Response(body=asset(name), status_code=200,
                                    headers={**HEADERS, "Content-Type": content_type}))


@functools.cache
def _page(trailing_slash: bool) -> str:
    # The script and style are named relative to the page, so that a stage's prefix (/api/console) holds; from
    # /console/ they are one level down.
    return asset("page.html").replace('"console/app.', '"app.') if trailing_slash else asset("page.html")


def page(request: Request) -> Response:
    slash = str((request.context or {}).get("path", "")).endswith("/")
    return guarded(lambda: Response(body=_page(slash), status_code=200, headers={**HEADERS, "Content-Type": HTML}))


def script(request: Request) -> Response:
    return _serve("app.js", SCRIPT)


def style(request: Request) -> Response:
    return _serve("app.css", STYLE)


METHODS: tuple[Method, ...] = (
    Method(P.CONSOLE, "GET", "", page, P.PUBLIC,
           "The web console: a page whose data all comes from API calls made with the user's token", "Text",
           tag="service", content="text/html"),
    Method(P.CONSOLE_SCRIPT, "GET", "", script, P.PUBLIC, "The web console's script", "Text", tag="service",
           content="text/javascript"),
    Method(P.CONSOLE_STYLE, "GET", "", style, P.PUBLIC, "The web console's style", "Text", tag="service",
           content="text/css"),
)
