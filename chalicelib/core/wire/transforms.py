"""Single message transforms in Google's JSON shape: ``messageTransforms`` of a topic or a subscription.

Each transform is a JavaScript function (``javascriptUdf``) called as ``fn(message, metadata)``; the list applies
in order, skipping the disabled ones (docs/transforms.md).
"""

from __future__ import annotations

from pydantic import StrictBool

from chalicelib.core.wire.base import Wire


class JavaScriptUdf(Wire):
    function_name: str = ""
    code: str = ""


class MessageTransform(Wire):
    javascript_udf: JavaScriptUdf | None = None
    enabled: StrictBool | None = None  # deprecated by Google in favour of ``disabled``; kept as sent
    disabled: StrictBool = False
