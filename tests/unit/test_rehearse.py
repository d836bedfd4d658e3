"""The pure parts of the rehearsal (infra/rehearse.py) and of the endpoint the deploy prints on an emulator."""

from __future__ import annotations

import pytest

from infra import deploy, rehearse

AWS_ENDPOINT = "https://k2x9q0abcd.execute-api.eu-west-1.amazonaws.com/dev/"


def test_on_aws_the_deploy_prints_cloudformations_endpoint() -> None:
    assert deploy.reachable_endpoint(AWS_ENDPOINT, "https://cloudformation.eu-west-1.amazonaws.com") == AWS_ENDPOINT


def test_on_an_emulator_the_deploy_prints_the_path_style_url_it_serves() -> None:
    assert (deploy.reachable_endpoint(AWS_ENDPOINT, "http://127.0.0.1:4566/")
            == "http://127.0.0.1:4566/_aws/execute-api/k2x9q0abcd/dev")
    assert deploy.reachable_endpoint("", "http://127.0.0.1:4566") == ""  # no API: nothing made up


def test_an_http_apis_default_stage_has_no_stage_in_its_path() -> None:
    http_endpoint = "https://k2x9q0abcd.execute-api.eu-west-1.amazonaws.com/"
    assert (deploy.reachable_endpoint(http_endpoint, "http://127.0.0.1:4566/")
            == "http://127.0.0.1:4566/_aws/execute-api/k2x9q0abcd")
    assert deploy.reachable_endpoint(http_endpoint, "https://cloudformation.eu-west-1.amazonaws.com") == http_endpoint


def test_the_rehearsal_takes_the_url_the_deploy_printed_on_its_emulator() -> None:
    output = "deployed: stage dev in 000000000000/us-east-1\nendpoint: http://127.0.0.1:4566/_aws/execute-api/a1/dev\n"
    assert rehearse.api_url("http://127.0.0.1:4566", output) == "http://127.0.0.1:4566/_aws/execute-api/a1/dev"
    with pytest.raises(RuntimeError):  # a URL elsewhere (real AWS) is never driven by the rehearsal
        rehearse.api_url("http://127.0.0.1:4566", f"endpoint: {AWS_ENDPOINT}\n")


def test_the_rehearsal_never_passes_on_the_callers_aws_or_metro_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("AWS_PROFILE", "prod"), ("AWS_ACCESS_KEY_ID", "AKIAREAL"), ("METRO_AUTH", "open"),
                        ("AWS_ENDPOINT_URL", "https://elsewhere"), ("PATH", "/bin")):
        monkeypatch.setenv(name, value)
    env = rehearse.emulator_environment("http://127.0.0.1:4566")
    assert env["AWS_ENDPOINT_URL"] == "http://127.0.0.1:4566" and env["AWS_ACCESS_KEY_ID"] == "test"
    assert "AWS_PROFILE" not in env and "METRO_AUTH" not in env and env["PATH"] == "/bin"

