"""Metro's observability rules as checkov custom checks, run over the merged app template after the SAM transform
(infra/policy_check.py; ``make test`` runs them through tests/package/test_template_policies.py). Loaded by checkov
from this directory (``--external-checks-dir``), in the venv ``.venv-checkov`` (requirements-checkov.txt): checkov is
not importable from ``.venv``. The graph rules (every function on the dashboard, every function with its log group)
are the YAML files beside this one."""

from __future__ import annotations

from typing import Any

from checkov.cloudformation.checks.resource.base_resource_check import BaseResourceCheck
from checkov.common.models.enums import CheckCategories, CheckResult

LOGGING = (CheckCategories.LOGGING,)


def _props(conf: dict[str, Any]) -> dict[str, Any]:
    props = conf.get("Properties")
    return props if isinstance(props, dict) else {}


def _result(ok: bool) -> CheckResult:
    return CheckResult.PASSED if ok else CheckResult.FAILED


class FunctionTracingActive(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(name="Every Lambda function has X-Ray active tracing", id="CKV_METRO_1", categories=LOGGING,
                         supported_resources=("AWS::Lambda::Function",))

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        tracing = _props(conf).get("TracingConfig")
        return _result(isinstance(tracing, dict) and tracing.get("Mode") == "Active")


class LogGroupRetention(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(name="Every log group has a retention", id="CKV_METRO_2", categories=LOGGING,
                         supported_resources=("AWS::Logs::LogGroup",))

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        days = _props(conf).get("RetentionInDays")
        return _result(isinstance(days, int) and days > 0)


class AlarmHasAction(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(name="Every alarm tells someone (AlarmActions)", id="CKV_METRO_3", categories=LOGGING,
                         supported_resources=("AWS::CloudWatch::Alarm",))

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        actions = _props(conf).get("AlarmActions")
        return _result(isinstance(actions, list) and bool(actions) and all(actions))


class StageAccessLogs(BaseResourceCheck):
    """Access logs in JSON, and never the query string: AMS keys travel in ``?key=``. A REST API's stage
    (``AccessLogSetting``) or an HTTP API's (``AccessLogSettings``)."""

    def __init__(self) -> None:
        super().__init__(name="Every API stage writes access logs without the query string", id="CKV_METRO_4",
                         categories=LOGGING, supported_resources=("AWS::ApiGateway::Stage", "AWS::ApiGatewayV2::Stage"))

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        props = _props(conf)
        setting = props.get("AccessLogSetting", props.get("AccessLogSettings"))
        if not isinstance(setting, dict) or not setting.get("DestinationArn"):
            return CheckResult.FAILED
        fmt = setting.get("Format")
        return _result(isinstance(fmt, str) and fmt.startswith("{") and "querystring" not in fmt.lower()
                       and "$input" not in fmt)


class StageTracing(BaseResourceCheck):
    """REST API stages only: an HTTP API has no X-Ray tracing at the gateway."""

    def __init__(self) -> None:
        super().__init__(name="Every API stage has X-Ray tracing", id="CKV_METRO_5", categories=LOGGING,
                         supported_resources=("AWS::ApiGateway::Stage",))

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        return _result(_props(conf).get("TracingEnabled") is True)


CHECKS = (FunctionTracingActive(), LogGroupRetention(), AlarmHasAction(), StageAccessLogs(), StageTracing())
