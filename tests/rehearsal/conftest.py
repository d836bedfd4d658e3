"""The deployed stage of ``make rehearse`` (infra/rehearse.py): its API Gateway URL, its admin token read from SSM
Parameter Store where the deploy put it, and Google's clients with that token as a bearer token.

The rehearsal deploys the stage in its deployed configuration: ``METRO_MODE=aws``, hence ``METRO_AUTH=keys``,
with every secret from SSM. Every call here carries a token.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from google.cloud import pubsub_v1
from google.oauth2.credentials import Credentials
from google.pubsub_v1 import PublisherClient as GapicPublisher

from infra import secrets
from infra.names import StageNames
from tests.e2e.conftest import _no_emulator_env  # noqa: F401  (autouse: google-cloud-pubsub must use client_options)
from tests.e2e.test_auth_keys import call

PROJECT = "rehearsal"
_counter = itertools.count()


@dataclass(frozen=True)
class Deployed:
    url: str  # the stage's API Gateway URL on the emulator
    names: StageNames
    admin_key: str

    def client_options(self) -> dict[str, str]:
        return {"api_endpoint": self.url}


def ok(deployed: Deployed, method: str, path: str, token: str, body: Any = None) -> Any:
    """A curl-like call with ``x-api-key`` that must answer 200; its JSON body."""
    resp = call(deployed, method, path, token, body)  # type: ignore[arg-type]  # call() reads .url only
    assert resp.status_code == 200, (method, path, resp.text)
    return resp.json() if resp.content else {}


@pytest.fixture(scope="session")
def deployed() -> Deployed:
    stage = os.environ.get("METRO_REHEARSAL_STAGE", "dev")
    ssm = boto3.client("ssm")  # AWS_ENDPOINT_URL: the emulator
    key = ssm.get_parameter(Name=f"{secrets.path(stage)}/admin-key", WithDecryption=True)["Parameter"]["Value"]
    return Deployed(os.environ["METRO_REHEARSAL_URL"], StageNames(stage), str(key))


@pytest.fixture
def unique() -> str:
    return f"r{next(_counter)}-{os.getpid() % 100000}"


@pytest.fixture(scope="session")
def publisher(deployed: Deployed) -> Any:
    return pubsub_v1.PublisherClient(transport="rest", client_options=deployed.client_options(),
                                     credentials=Credentials(deployed.admin_key))


@pytest.fixture(scope="session")
def subscriber(deployed: Deployed) -> Any:
    return pubsub_v1.SubscriberClient(transport="rest", client_options=deployed.client_options(),
                                      credentials=Credentials(deployed.admin_key))


@pytest.fixture(scope="session")
def gapic(deployed: Deployed) -> Any:
    """One call, one PublishRequest: no client-side batching."""
    return GapicPublisher(transport="rest", client_options=deployed.client_options(),
                          credentials=Credentials(deployed.admin_key))


@pytest.fixture
def topic(publisher: Any, unique: str) -> str:
    return str(publisher.create_topic(name=f"projects/{PROJECT}/topics/t-{unique}").name)


@pytest.fixture
def sub(subscriber: Any, topic: str, unique: str) -> str:
    name = f"projects/{PROJECT}/subscriptions/s-{unique}"
    subscriber.create_subscription(name=name, topic=topic)
    return name
