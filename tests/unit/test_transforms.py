"""The transform engine (chalicelib/core/transforms.py): Google's calling convention, drops, failures, the time
limit and memory cap, the sandbox (no timers, network, modules), order, and the batch of the transform function."""

from __future__ import annotations

import base64
import time

import pytest

from chalicelib.core import transforms
from chalicelib.core.errors import InvalidArgument
from chalicelib.core.transforms import Engine, Limits, Message, TransformFailed, Udf
from chalicelib.core.wire.transforms import JavaScriptUdf, MessageTransform
from chalicelib.service import transforms as service_transforms

ENGINE = Engine(Limits(call_ms=200, memory_bytes=32 * 1024 * 1024))
MSG = Message(b"hello", {"a": "1"}, "42", "2026-11-27T00:00:00Z", "key")


def udf(body: str, name: str = "f") -> Udf:
    return Udf(name, f"function {name}(message, metadata) {{ {body} }}")


def test_the_function_sees_googles_message_and_metadata() -> None:
    out = ENGINE.apply([udf("return {data: JSON.stringify([message, metadata])};")], MSG)
    assert out is not None and out.data == (b'[{"data":"hello","attributes":{"a":"1"}},{"message_id":"42",'
                                            b'"publish_time":"2026-11-27T00:00:00Z","ordering_key":"key"}]')
    assert out.attributes == {"a": "1"}  # no attributes returned: they stay


def test_rewrite_and_attributes() -> None:
    out = ENGINE.apply([udf("return {data: message.data + '!', attributes: {b: '2'}};")], MSG)
    assert out == Message(b"hello!", {"b": "2"}, "42", "2026-11-27T00:00:00Z", "key")


def test_empty_attributes_remove_them_all() -> None:
    out = ENGINE.apply([udf("return {data: message.data, attributes: {}};")], MSG)
    assert out is not None and out.attributes == {}


def test_null_drops_and_stops_the_chain() -> None:
    after = udf("throw new Error('never called');", "g")
    assert ENGINE.apply([udf("return null;"), after], MSG) is None


def test_transforms_apply_in_order() -> None:
    first, second = udf("return {data: message.data + 'A'};", "a"), udf("return {data: message.data + 'B'};", "b")
    assert ENGINE.apply([first, second], MSG).data == b"helloAB"  # type: ignore[union-attr]
    assert ENGINE.apply([second, first], MSG).data == b"helloBA"  # type: ignore[union-attr]


def test_disabled_transforms_do_not_run() -> None:
    on = MessageTransform(javascript_udf=JavaScriptUdf(function_name="a", code="function a(m) { return m; }"))
    off = MessageTransform(javascript_udf=JavaScriptUdf(function_name="b", code="function b(m) { return m; }"),
                           disabled=True)
    assert [u.function_name for u in service_transforms.active([on, off, on])] == ["a", "a"]


@pytest.mark.parametrize(("body", "says"), [
    ("throw new Error('nope');", "threw: .*nope"),
    ("return 7;", "no string 'data'"),
    ("return {data: 5};", "no string 'data'"),
    ("return {data: 'x', attributes: {n: 5}};", "not strings"),
])
def test_a_failure_raises(body: str, says: str) -> None:
    with pytest.raises(TransformFailed, match=says):
        ENGINE.apply([udf(body)], MSG)


@pytest.mark.parametrize(("code", "says"), [
    ("function f(m) { return m", "does not compile"),
    ("function g(m) { return m; }", "no function named 'f'"),
    ("var f = 'text';", "no function named 'f'"),
    ("throw new Error('top');", "top-level code throws"),
    ("while (true) {}", "time and memory limits"),
])
def test_check_refuses_bad_code(code: str, says: str) -> None:
    with pytest.raises(InvalidArgument, match=says):
        ENGINE.check([Udf("f", code)])


def test_a_runaway_udf_is_stopped_by_the_time_limit_and_the_engine_goes_on() -> None:
    loop = udf("while (true) {}")
    started = time.perf_counter()
    with pytest.raises(TransformFailed, match="ran longer than 200 ms"):
        ENGINE.apply([loop], MSG)
    assert time.perf_counter() - started < 30  # stopped, not hung (a generous bound: the limit is 0.2 s)
    ok = ENGINE.apply([udf("return message;", "fine")], MSG)
    assert ok is not None and ok.data == b"hello"
    with pytest.raises(TransformFailed, match="ran longer"):  # compiled again after being thrown away
        ENGINE.apply([loop], MSG)


def test_the_memory_cap_stops_a_udf_that_allocates_without_end() -> None:
    hog = udf("const a = []; while (true) { a.push(new Array(100000).fill(message.data)); }", "hog")
    engine = Engine(Limits(call_ms=20_000, memory_bytes=16 * 1024 * 1024))
    with pytest.raises(TransformFailed, match=r"memory cap|ran longer"):
        engine.apply([hog], MSG)
    assert engine.apply([udf("return message;", "fine")], MSG) is not None


@pytest.mark.parametrize("call", [
    "setTimeout(() => 0, 1)", "clearTimeout(1)", "fetch('http://example.com')", "require('fs')",
    "new XMLHttpRequest()", "process.env",
    "globalThis.setTimeout = () => 0; setTimeout(() => 0, 1)", "__timer_manager.pending",
])
def test_no_timers_network_files_or_modules(call: str) -> None:
    with pytest.raises(TransformFailed):
        ENGINE.apply([udf(f"{call}; return message;", "sandboxed")], MSG)


def test_data_that_is_not_utf8_fails_rather_than_being_altered() -> None:
    with pytest.raises(TransformFailed, match="not UTF-8"):
        ENGINE.apply([udf("return message;")], Message(b"\xff\xfe", {}))


def test_a_udf_is_compiled_once_per_process() -> None:
    engine = Engine(Limits())
    counter = Udf("count", "var n = 0; function count(m) { n += 1; return {data: String(n)}; }")
    assert [engine.apply([counter], MSG).data for _ in range(3)] == [b"1", b"2", b"3"]  # type: ignore[union-attr]


def test_the_transform_functions_batch() -> None:
    code = ("function f(m, x) { if (m.data === 'drop') return null; if (m.data === 'bad') throw 1; "
            "return {data: m.data.toUpperCase(), attributes: {id: x.message_id}}; }")
    event = {"transforms": [{"javascriptUdf": {"functionName": "f", "code": code}}],
             "messages": [{"data": base64.b64encode(t.encode()).decode(), "attributes": {}, "messageId": str(i),
                           "publishTime": "", "orderingKey": ""} for i, t in enumerate(["hi", "drop", "bad"])]}
    results = transforms.run_batch(Limits(), event)["results"]
    assert results[0] == {"data": "SEk=", "attributes": {"id": "0"}}
    assert results[1] == {"dropped": True}
    assert "error" in results[2]
    bad = {"transforms": [{"javascriptUdf": {"functionName": "f", "code": "nope("}}], "messages": []}
    assert "does not compile" in transforms.run_batch(Limits(), bad)["invalid"]
