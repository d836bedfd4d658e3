"""List paging over the HTTP routes (Chalice's test client, moto): real tokens walk every page, and any
token Metro did not issue for that very listing is INVALID_ARGUMENT, never a retryable 503."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from chalice.test import Client

from app import app
from chalicelib import runtime
from chalicelib.runtime import Services

P = "paging-project"
OTHER = "other-project"
N = 3  # topics, and subscriptions of topic-0
TOPIC = f"projects/{P}/topics/topic-0"
JSON = {"Content-Type": "application/json"}
LISTINGS = [f"/v1/projects/{P}/topics", f"/v1/projects/{P}/subscriptions", f"/v1/{TOPIC}/subscriptions"]


@pytest.fixture
def http(services: Services) -> Iterator[Client]:
    """The app's routes over the fixture's moto backend (the app builds its own services from the same config)."""
    runtime.reset()
    with Client(app, stage_name="local") as client:  # "dev" is a deployed stage: keys mode
        made = [(f"/v1/projects/{P}/topics/topic-{i}", {}) for i in range(N)]
        made += [(f"/v1/projects/{OTHER}/topics/topic-0", {})]
        made += [(f"/v1/projects/{P}/subscriptions/sub-{i}", {"topic": TOPIC}) for i in range(N)]
        for path, body in made:
            assert client.http.put(path, body=json.dumps(body), headers=JSON).status_code == 200, path
        yield client
    runtime.reset()


def get(client: Client, path: str, **params: str) -> tuple[int, dict[str, Any]]:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    resp = client.http.get(f"{path}?{query}" if query else path)
    return resp.status_code, json.loads(resp.body or b"{}")


def names_in(page: dict[str, Any]) -> list[str]:
    items = page.get("topics", page.get("subscriptions", []))
    return [i if isinstance(i, str) else i["name"] for i in items]


def walk(client: Client, path: str, size: int) -> list[list[str]]:
    pages, token = [], ""
    while True:
        status, page = get(client, path, pageSize=str(size), **({"pageToken": token} if token else {}))
        assert status == 200, page
        pages.append(names_in(page))
        token = page.get("nextPageToken", "")
        if not token:
            return pages


def test_real_tokens_walk_every_page_once(http: Client) -> None:
    for path in LISTINGS:
        for size, lengths in ((1, [1, 1, 1]), (2, [2, 1])):
            pages = walk(http, path, size)
            assert [len(p) for p in pages] == lengths, path
            everything = [n for p in pages for n in p]
            assert sorted(everything) == sorted(names_in(get(http, path)[1])) and len(set(everything)) == N


def assert_invalid_token(client: Client, path: str, token: str) -> None:
    status, body = get(client, path, pageSize="2", pageToken=token)
    assert status == 400, (path, body)
    assert body["error"]["status"] == "INVALID_ARGUMENT"
    assert body["error"]["message"] == "Invalid page token"


def test_forged_tampered_and_foreign_tokens_are_invalid_argument(http: Client) -> None:
    for path, elsewhere in zip(LISTINGS, [*LISTINGS[1:], LISTINGS[0]]):
        assert_invalid_token(http, path, "eyJwayI6MSwic2siOjJ9")  # base64 of {"pk":1,"sk":2}, once answered 503
        token = get(http, path, pageSize="2")[1]["nextPageToken"]
        assert get(http, path, pageSize="2", pageToken=token)[0] == 200  # positive control: valid where it came from
        payload, mac = token.split(".")
        assert_invalid_token(http, path, f"{payload[:-2]}.{mac}")
        assert_invalid_token(http, path, f"{payload}.{mac[:-3]}")
        assert_invalid_token(http, elsewhere, token)  # another listing of the same project
        assert_invalid_token(http, path.replace(P, OTHER), token)  # the same listing of another project
