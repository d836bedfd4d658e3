"""AMS's operational routes, on both endpoints: ``GET /v1/status``, ``GET /v1/version`` and the service-wide
``GET /v1/metrics``; and ``GET /``, the public front page that names Metro, its version, its ports and where its
description is."""

from __future__ import annotations

import json
import platform
from html import escape
from importlib import metadata
from typing import Any

from chalice.app import Request, Response

from chalicelib import config
from chalicelib.api import permissions as P
from chalicelib.api.handlers import Incoming, Result
from chalicelib.api.methods import Method
from chalicelib.core.errors import Unavailable
from chalicelib.runtime import services

RELEASE = "0.1.0"  # pyproject.toml's version


DESCRIPTION = "Google Cloud Pub/Sub REST v1 and ARGO Messaging Service API, serverless on AWS"
GRPC = "on the REST port locally (PUBSUB_EMULATOR_HOST=host:port); deployed, the gRPC service's own endpoint"


def root(request: Request | None = None) -> Response:
    """``GET /``: public."""
    return root_page(request.headers.get("accept", "") if request is not None else "")


def root_info(cfg: config.Config | None = None) -> dict[str, Any]:
    """What ``GET /`` tells: the ports are ``make run``'s locally; a deployed stage serves both dialects over
    HTTPS (443), each from an API of its own."""
    deployed = (cfg or config.load()).deployed
    local = config.LocalConfig()
    ports = {"rest": 443, "ams": 443} if deployed else {"rest": local.port, "ams": local.ams_port}
    return {"name": "Metro", "description": DESCRIPTION, "version": RELEASE, "docs": "/docs",
            "openapi": "/openapi.json", "ports": ports, "grpc": GRPC}


def _match(media_range: str, media: str) -> int:
    """How specifically an Accept range names ``media``: 2 exactly, 1 by its type's wildcard, 0 by */*, -1 not."""
    return {media: 2, media.partition("/")[0] + "/*": 1, "*/*": 0}.get(media_range, -1)


def _q(params: list[str]) -> float:
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                return float(value)
            except ValueError:
                return 0.0
    return 1.0


def _quality(accept: str, media: str) -> float:
    """The q-value an Accept header gives ``media`` (its most specific matching range), 0 when none matches."""
    best, specificity = 0.0, -1
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        match = _match(fields[0].lower(), media)
        if match > specificity:
            best, specificity = _q(fields[1:]), match
    return best


def prefers_html(accept: str) -> bool:
    """A browser's Accept header (text/html first, */* lower) gets HTML; curl's */*, none, or JSON get JSON."""
    return _quality(accept, "text/html") > _quality(accept, "application/json")


def _html(info: dict[str, Any]) -> str:
    ports = info["ports"]
    # Relative links: a deployed stage serves this page under its stage's path (https://.../dev/).
    items = [f'<li><a href="{info["docs"][1:]}">{info["docs"]}</a>: every route, for people</li>',
             f'<li><a href="{info["openapi"][1:]}">{info["openapi"]}</a>: the OpenAPI 3.1 description</li>',
             f"<li>Google's REST dialect: port {ports['rest']}; the AMS dialect (HTTPS): port {ports['ams']}</li>",
             f"<li>gRPC: {escape(info['grpc'])}</li>"]
    return (f'<!doctype html><html><head><meta charset="utf-8"><title>Metro</title></head><body>'
            f"<h1>Metro {escape(info['version'])}</h1><p>{escape(info['description'])}</p>"
            f"<ul>{''.join(items)}</ul></body></html>")


def root_page(accept: str = "") -> Response:
    """``GET /``: Metro's name, version, ports and where its description is; JSON, or an HTML page when the
    Accept header prefers text/html."""
    info = root_info()
    if prefers_html(accept):
        return Response(body=_html(info), status_code=200, headers={"Content-Type": "text/html; charset=utf-8"})
    return Response(body=json.dumps(info), status_code=200, headers={"Content-Type": "application/json"})


def status(_: str, incoming: Incoming) -> Result:
    """AMS's health answer when every store passes its probe (service/health.py, kept a few seconds); 503
    UNAVAILABLE in the dialect's error envelope, naming the failing stores, when one does not."""
    checked = services().health.status()
    if not checked.healthy:
        raise Unavailable(checked.problem)
    return checked


def version(_: str, incoming: Incoming) -> Result:
    return {"release": RELEASE, "distro": "metro", "python": platform.python_version(),
            "chalice": metadata.version("chalice"), "os": platform.system().lower(), "architecture": platform.machine()}


def service_metrics(_: str, incoming: Incoming) -> Result:
    return services().ams.service_metrics()


METHODS: tuple[Method, ...] = (
    Method(P.STATUS, "GET", "", status, P.AUTHENTICATED, "The service's health (AMS)", "Status", tag="service"),
    Method(P.VERSION, "GET", "", version, P.AUTHENTICATED, "The service's version (AMS)", "Version", tag="service"),
    Method(P.SERVICE_METRICS, "GET", "", service_metrics, P.SERVICE_ADMIN,
           "Projects, users, topics and subscriptions of the service, counted", "Metrics", tag="service"),
)
