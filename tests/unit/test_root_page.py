"""``GET /``: Metro's front page names the service, its version, its ports and where its description is, as JSON
(or HTML for a browser), so that whoever opens the API's base URL learns where to go next."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest

from chalicelib import config
from chalicelib.api import operations
from chalicelib.api.openapi import components

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"


@pytest.mark.parametrize(("accept", "html"), [
    ("", False),
    ("*/*", False),  # curl
    ("application/json", False),
    (BROWSER, True),
    ("text/html", True),
    ("text/*;q=0.5, application/json;q=0.4", True),
    ("text/html;q=0.1, */*", False),
    ("application/json, text/html", False),  # a tie goes to JSON
    ("text/html;q=nonsense, application/json;q=0.1", False),
])
def test_html_only_when_the_accept_header_prefers_it(accept: str, html: bool) -> None:
    assert operations.prefers_html(accept) is html


def test_the_json_names_metro_its_version_description_and_ports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METRO_PORT", "9085")
    monkeypatch.setenv("METRO_AMS_PORT", "9443")
    monkeypatch.delenv("METRO_MODE", raising=False)
    page = operations.root_page("*/*")
    assert (page.status_code, page.headers["Content-Type"]) == (200, "application/json")
    info = json.loads(page.body)
    assert info["name"] == "Metro" and info["version"] == operations.RELEASE
    assert (info["docs"], info["openapi"], info["ports"]) == ("/docs", "/openapi.json", {"rest": 9085, "ams": 9443})
    assert "PUBSUB_EMULATOR_HOST" in info["grpc"]
    jsonschema.validate(info, components.components()["Root"])  # what the description promises


def test_a_deployed_stage_serves_both_dialects_over_https() -> None:
    info = operations.root_info(config.Config(deployed=True))
    assert info["ports"] == {"rest": 443, "ams": 443}


def test_a_browser_gets_a_page_with_links_that_work_under_a_stage_path() -> None:
    page = operations.root_page(BROWSER)
    assert (page.status_code, page.headers["Content-Type"]) == (200, "text/html; charset=utf-8")
    body: Any = page.body
    assert '<a href="docs">/docs</a>' in body and '<a href="openapi.json">/openapi.json</a>' in body
    assert f"Metro {operations.RELEASE}" in body and "gRPC" in body


def test_root_reads_the_accept_header_of_the_request_it_is_given() -> None:
    def request(accept: str) -> Any:
        return SimpleNamespace(headers={"accept": accept})

    assert operations.root(request(BROWSER)).headers["Content-Type"].startswith("text/html")
    assert operations.root(request("*/*")).headers["Content-Type"] == "application/json"
    assert operations.root().headers["Content-Type"] == "application/json"
