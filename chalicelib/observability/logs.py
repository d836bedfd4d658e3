"""Metro's log lines: structured JSON deployed (Powertools' LambdaPowertoolsFormatter), readable text locally, and
never a token, key or secret in either.

``configure`` (called once by app.py) takes over the loggers Metro writes to, ``metro`` (Chalice's ``app.log`` and
``metro.*``) and ``chalicelib`` (the modules' ``logging.getLogger(__name__)``), so no module changes how it logs:

* ``json`` (METRO_LOG_FORMAT, the default when deployed): one JSON object per record on stdout with ``service``
  ``metro``, ``level``, ``location``, ``timestamp``, ``message``, the Lambda request id (``function_request_id``), the
  function's name, ``cold_start``, ``correlation_id`` (the API Gateway request id of an API call, the publish request
  ids of a fan-out batch, the SQS message ids of a push batch, the seek id of a seek chunk) and X-Ray's trace id.
  Deployed, the root logger's handler (the runtime's text handler) is replaced too, so a library's warning is a
  JSON line as well;
* ``text``: the handlers already in place keep their format, wrapped so that they redact too.

:func:`redact` runs over every formatted line, exception traces included: bearer and basic credentials, JWTs (push
tokens), PEM private keys, ``key=`` / ``token=`` query parameters and the values of fields named like a credential
(``authorization``, ``x-api-key``, ``token``, ``ack_secret``, ``admin_key``, ``signing_key``, ``password``, ...).
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
from collections.abc import Iterator
from typing import IO, Any

from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

from chalicelib import config
from chalicelib.observability.catalog import SERVICE

METRO_LOGGERS = ("metro", "chalicelib")
REDACTED = "[REDACTED]"
TEXT_FORMAT = "%(levelname)s %(name)s %(message)s"
_Q = r"""\\?["']"""  # a quote, escaped or not (a message inside a JSON line has its quotes escaped)
_SECRET_NAMES = (r"authorization|proxy-authorization|x-api-key|x-goog-api-key|api[-_]?key|apikey|"
                 r"(?:access[-_]|id[-_]|refresh[-_]|push[-_]|admin[-_])?token|admin[-_]?key|ack[-_]?secret|"
                 r"(?:push[-_])?signing[-_]?key|private[-_]?key|client[-_]?secret|secret|password")
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S), REDACTED),
    (re.compile(r"\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"), REDACTED),  # a JWT: push tokens
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]+"), rf"\1\2{REDACTED}"),
    # a query parameter (AMS keys travel in ?key=), or key=... anywhere
    (re.compile(r"(?i)((?:[?&;]|\b)(?:key|token|access_token|api_key|apikey)=)[^&\s\"'\\#]*"), rf"\1{REDACTED}"),
    # "name": "value", 'name': ['value'], name=value, name: value (headers, dicts, JSON bodies, repr())
    (re.compile(rf"(?i)((?:{_Q})?[\w-]*(?:{_SECRET_NAMES})(?:{_Q})?\s*[:=]\s*\[?\s*(?:{_Q})?)"
                rf"(?!(?:(?:bearer|basic)\s+)?{re.escape(REDACTED)})(?:(?:bearer|basic)\s+)?[^\s\"'\\,;&}})\]]+"),
     rf"\1{REDACTED}"),
    (re.compile(rf"(?i)((?:{_Q})key(?:{_Q})\s*:\s*\[?\s*(?:{_Q}))[^\"'\\]+"), rf"\1{REDACTED}"),  # 'key': '...'
)


def redact(text: str) -> str:
    """``text`` with every credential-looking value replaced by ``[REDACTED]``."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


class JsonFormatter(LambdaPowertoolsFormatter):
    """Powertools' structured line, redacted."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class RedactingFormatter(logging.Formatter):
    """A handler's own formatter (or logging's default), its output redacted."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        return redact(self.inner.format(record))


class _State:
    formatter: JsonFormatter | None = None  # json mode: the formatter whose keys carry the invocation's ids
    handler: logging.Handler | None = None
    bound: tuple[str, ...] = ()


def configure(fmt: str | None = None, level: str | None = None, stream: IO[str] | None = None,
              take_root: bool | None = None) -> None:
    """Take over Metro's loggers (again, if called again: tests switch format and stream); ``None`` arguments come
    from configuration, ``take_root`` defaults to deployed."""
    fmt = fmt or config.log_format()
    level = (level or config.log_level()).upper()
    take_root = config.deployed() if take_root is None else take_root
    root = logging.getLogger()
    if _State.handler is not None:  # undo an earlier json configuration
        for name in (*METRO_LOGGERS, ""):
            logging.getLogger(name).removeHandler(_State.handler)
    _State.formatter = _State.handler = None
    for name in METRO_LOGGERS:
        logging.getLogger(name).setLevel(level)
    if fmt == "json":
        formatter = JsonFormatter(service=SERVICE, utc=True, use_rfc3339=True)
        handler = logging.StreamHandler(stream or sys.stdout)
        handler.setFormatter(formatter)
        for name in METRO_LOGGERS:
            logger = logging.getLogger(name)
            logger.handlers = [handler]
            logger.propagate = False
        if take_root:
            root.handlers = [handler]
        _State.formatter, _State.handler = formatter, handler
        return
    if stream is not None:  # text to a stream of the caller's (tests): Metro's loggers only
        handler = logging.StreamHandler(stream)
        handler.setFormatter(RedactingFormatter(logging.Formatter(TEXT_FORMAT)))
        for name in METRO_LOGGERS:
            logger = logging.getLogger(name)
            logger.handlers, logger.propagate = [handler], False
        _State.handler = handler
        return
    for name in METRO_LOGGERS:
        logger = logging.getLogger(name)
        logger.propagate = not logger.handlers  # Chalice gives "metro" a handler of its own
    for logger in (root, *(logging.getLogger(n) for n in METRO_LOGGERS)):
        for each in logger.handlers:
            if not isinstance(each.formatter, RedactingFormatter):
                each.setFormatter(RedactingFormatter(each.formatter))


def lambda_keys(context: Any) -> dict[str, Any]:
    """What a line says of the invocation: the request id and function (``context`` may be None locally)."""
    if context is None:
        return {}
    keys = {"function_request_id": getattr(context, "aws_request_id", None),
            "function_name": getattr(context, "function_name", None),
            "function_memory_size": getattr(context, "memory_limit_in_mb", None)}
    return {k: v for k, v in keys.items() if v is not None}


@contextlib.contextmanager
def bound(**keys: Any) -> Iterator[None]:
    """Every line written inside carries ``keys`` (json mode; Lambda runs one invocation at a time per process, so
    the keys are the process's, which the threads a handler starts see too)."""
    formatter = _State.formatter
    if formatter is None:
        yield
        return
    present = {k: v for k, v in keys.items() if v not in (None, "")}
    formatter.append_keys(**present)
    try:
        yield
    finally:
        formatter.remove_keys(list(present))
