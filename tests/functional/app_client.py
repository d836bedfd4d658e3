"""The Chalice app on in-process moto under an environment of the test's (keys mode, its admin key...), for
the tests that drive it through Chalice's test client; the environment is put back afterwards."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping

from chalice.test import Client
from moto import mock_aws

from app import app
from chalicelib import runtime
from chalicelib.config import Config
from chalicelib.local.bootstrap import bootstrap
from chalicelib.store import aws


@contextlib.contextmanager
def process_environment(env: Mapping[str, str], also_saved: tuple[str, ...] = ()) -> Iterator[None]:
    """``env`` in the process's environment (and AWS_ENDPOINT_URL out of it: in-process moto), with fresh AWS
    clients and services; everything put back afterwards, ``also_saved`` too."""
    saved = {k: os.environ.get(k) for k in [*env, "AWS_ENDPOINT_URL", *also_saved]}
    os.environ.update(env)
    os.environ.pop("AWS_ENDPOINT_URL", None)
    aws.reset_clients()
    runtime.reset()
    try:
        yield
    finally:
        runtime.reset()
        aws.reset_clients()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def app_client(env: Mapping[str, str]) -> Iterator[Client]:
    with process_environment(env), mock_aws(), Client(app, stage_name="local") as client:
        bootstrap(Config())
        yield client
