"""Metro driven over plain HTTP (requests.Session with keep-alive per thread), as the REST API is used."""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests

from bench.pricing import google_message_bytes
from bench.workload import ConsumeFactory, Publish, PublishFactory, Pulled

PROJECT = "bench"
TS = "bench_ts"  # attribute carrying the publisher's send time (epoch seconds)
JSON = {"Content-Type": "application/json"}


def payloads(size: int, count: int = 16) -> list[str]:
    """A few distinct random bodies of ``size`` bytes, base64-encoded for the wire."""
    return [base64.b64encode(os.urandom(size)).decode() for _ in range(count)]


def _b64_len(text: str) -> int:
    return len(text) * 3 // 4 - (2 if text.endswith("==") else 1 if text.endswith("=") else 0)


class MetroClient:
    """``token``: sent as ``x-api-key`` on every request (METRO_AUTH=keys); none in open mode."""

    def __init__(self, url: str, token: str = "", project: str = PROJECT) -> None:
        self.url = url.rstrip("/")
        self.project = project
        self.session = requests.Session()
        self.headers = {**JSON, "x-api-key": token} if token else JSON
        self.topic_body: dict[str, Any] = {}

    def schema(self, schema_id: str, definition: str) -> None:
        """An Avro schema; the topics this client creates from now on check their messages against it (JSON)."""
        self.call("POST", f"projects/{self.project}/schemas?schemaId={schema_id}",
                  {"type": "AVRO", "definition": definition})
        self.topic_body = {"schemaSettings": {"schema": f"projects/{self.project}/schemas/{schema_id}",
                                              "encoding": "JSON"}}

    def call(self, method: str, path: str, body: Any = None, timeout: float = 60) -> Any:
        data = None if body is None else json.dumps(body)
        resp = self.session.request(method, f"{self.url}/v1/{path}", data=data, headers=self.headers,
                                    timeout=timeout)
        if resp.status_code != 200:
            raise RuntimeError(f"{method} {path}: HTTP {resp.status_code}: {resp.text[:300]}")
        return resp.json() if resp.content else {}

    def create(self, topic: str, subscriptions: list[str], ack_deadline: int = 20,
               extra: Callable[[str], dict[str, Any]] | None = None) -> None:
        """The topic and its subscriptions; ``extra(sub)`` adds fields (pushConfig, enableMessageOrdering, ...)."""
        self.call("PUT", f"projects/{self.project}/topics/{topic}", self.topic_body)
        for sub in subscriptions:
            body = {"topic": f"projects/{self.project}/topics/{topic}", "ackDeadlineSeconds": ack_deadline}
            self.call("PUT", f"projects/{self.project}/subscriptions/{sub}",
                      {**body, **(extra(sub) if extra else {})})


@dataclass(frozen=True)
class Tokens:
    """The data-path identities of a keys-mode run: ``publisher`` on the topic's ACL, ``consumer`` on the
    subscriptions' ACLs (each a user with only that role in the project)."""

    publisher: str
    consumer: str


def grant(url: str, admin_key: str, project: str, topic: str, subscriptions: list[str], prefix: str) -> Tokens:
    """As an operator would through the API (AMS dialect), with the service admin's token: the project, a
    publisher user and a consumer user, and the topic's and subscriptions' ACLs naming them. The topic and
    subscriptions must exist."""
    admin = MetroClient(url, admin_key, project)
    admin.call("POST", f"projects/{project}", {"description": "benchmark, METRO_AUTH=keys"})
    made = {}
    for role in ("publisher", "consumer"):
        user = admin.call("POST", f"users/{prefix}-{role}", {"projects": [{"project": project, "roles": [role]}]})
        made[role] = user["token"]
    admin.call("POST", f"projects/{project}/topics/{topic}:modifyAcl", {"authorized_users": [f"{prefix}-publisher"]})
    for sub in subscriptions:
        admin.call("POST", f"projects/{project}/subscriptions/{sub}:modifyAcl",
                   {"authorized_users": [f"{prefix}-consumer"]})
    return Tokens(made["publisher"], made["consumer"])


def publisher(url: str, topic: str, bodies: list[str], size: int, ordering_keys: int = 0, token: str = "",
              project: str = PROJECT) -> PublishFactory:
    """Publish requests of ``count`` messages; with ``ordering_keys`` > 0 each carries one of that many keys."""

    def factory() -> Publish:
        client = MetroClient(url, token, project)
        path = f"projects/{project}/topics/{topic}:publish"

        def publish(index: int, count: int) -> int:
            ts = f"{time.time():.6f}"
            attrs = {TS: ts}
            messages: list[dict[str, Any]] = [{"data": bodies[(index + i) % len(bodies)], "attributes": attrs}
                                              for i in range(count)]
            if ordering_keys:
                for i, m in enumerate(messages):
                    m["orderingKey"] = f"key-{(index * count + i) % ordering_keys}"
            got = client.call("POST", path, {"messages": messages})
            if len(got.get("messageIds", [])) != count:
                raise RuntimeError(f"publish returned {len(got.get('messageIds', []))} ids for {count} messages")
            return count * google_message_bytes(size, attrs)

        return publish

    return factory


def consumer(url: str, size: int, max_messages: int, pull_timeout: float, token: str = "",
             project: str = PROJECT) -> ConsumeFactory:
    def factory(sub: str) -> Any:
        client = MetroClient(url, token, project)
        base = f"projects/{project}/subscriptions/{sub}"

        def consume() -> Pulled:
            got = client.call("POST", base + ":pull", {"maxMessages": max_messages}, timeout=pull_timeout)
            now = time.time()
            received = got.get("receivedMessages", [])
            out = Pulled()
            if not received:
                return out
            for r in received:
                m = r["message"]
                attrs = m.get("attributes", {})
                data_len = _b64_len(m.get("data", ""))
                out.ids.append(m["messageId"])
                out.latencies.append(now - float(attrs.get(TS, now)))
                out.google_bytes += google_message_bytes(data_len, attrs)
                out.bad += int(data_len != size)
            client.call("POST", base + ":acknowledge", {"ackIds": [r["ackId"] for r in received]})
            return out

        return consume

    return factory
