"""Schema validation figures: checks per second per core for each schema type and encoding on 1 KiB messages,
and what the A-schema scenario (A's publishes checked against an Avro schema, JSON encoding) needs: the schema
and 1 KiB messages that conform to it.

The per-core figure is CPU time (``time.process_time``) of one thread checking one message again and again
through the same path publish uses (core/schemas/compiled.check_message on a compiled revision), so it does
not depend on how busy the other cores are.
"""

from __future__ import annotations

import base64
import io
import json
import time
from collections.abc import Callable
from typing import Any

import fastavro
from google.protobuf import json_format
from rich.table import Table

from bench import pricing
from chalicelib.core.schemas.compiled import Checker, check_message, compile_spec, conforming
from chalicelib.core.schemas.model import Encoding, SchemaRevision, SchemaSpec, SchemaType
from chalicelib.core.schemas.protobuf import ProtoSchema
from chalicelib.core.wire.messages import NewMessage

KIB = 1024
TARGET_AVRO_JSON_PER_CORE = 20_000  # messages per second on one core
AVRO = json.dumps({"type": "record", "name": "Reading", "namespace": "metro.bench", "fields": [
    {"name": "id", "type": "string"}, {"name": "site", "type": "string"}, {"name": "value", "type": "double"},
    {"name": "count", "type": "long"}, {"name": "ok", "type": "boolean"},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["GAUGE", "COUNTER", "EVENT"]}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "labels", "type": {"type": "map", "values": "string"}},
    {"name": "unit", "type": ["null", "string"], "default": None},
    {"name": "note", "type": "string"}]})
PROTO = """syntax = "proto3";
package metro.bench;
message Reading {
  enum Kind { GAUGE = 0; COUNTER = 1; EVENT = 2; }
  string id = 1; string site = 2; double value = 3; int64 count = 4; bool ok = 5; Kind kind = 6;
  repeated string tags = 7; map<string, string> labels = 8; optional string unit = 9; string note = 10;
}
"""
JSON_SCHEMA = json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                          "required": ["id", "site", "value", "count", "ok", "kind", "tags", "labels", "note"],
                          "properties": {"id": {"type": "string"}, "site": {"type": "string"},
                                         "value": {"type": "number"}, "count": {"type": "integer"},
                                         "ok": {"type": "boolean"}, "kind": {"enum": ["GAUGE", "COUNTER", "EVENT"]},
                                         "tags": {"type": "array", "items": {"type": "string"}},
                                         "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                         "unit": {"type": ["string", "null"]}, "note": {"type": "string"}}})


def reading(index: int, note: str = "") -> dict[str, Any]:
    """One message's fields (plain values; each encoding wraps them its own way)."""
    return {"id": f"r-{index:08d}", "site": "site-a", "value": index * 0.5, "count": index, "ok": index % 2 == 0,
            "kind": "COUNTER", "tags": ["t1", "t2", "t3"], "labels": {"zone": "z1", "rack": "r7"}, "unit": "ms",
            "note": note}


def _padded(encode: Callable[[str], bytes], size: int) -> bytes:
    """``encode(note)`` with the note sized so the encoded message is ``size`` bytes (a length prefix that grows,
    or a field that appears only when not empty, is corrected by the second step)."""
    pad = size - len(encode(""))
    pad -= len(encode("x" * pad)) - size
    return encode("x" * max(0, pad))


def avro_json(index: int, size: int = KIB) -> bytes:
    """Avro's JSON encoding (the union is written as {"string": ...})."""
    def encode(note: str) -> bytes:
        value = reading(index, note)
        value["unit"] = {"string": value["unit"]}
        return json.dumps(value, separators=(",", ":")).encode()
    return _padded(encode, size)


def avro_binary(index: int, size: int = KIB) -> bytes:
    parsed = fastavro.parse_schema(json.loads(AVRO))

    def encode(note: str) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, reading(index, note))
        return out.getvalue()
    return _padded(encode, size)


def samples(size: int = KIB) -> list[tuple[str, SchemaSpec, Encoding, bytes]]:
    proto_cls = ProtoSchema(PROTO).message_class

    def proto_json(note: str) -> bytes:
        message = json_format.ParseDict(reading(1, note), proto_cls())
        return str(json_format.MessageToJson(message, indent=None)).encode()

    def proto_binary(note: str) -> bytes:
        return bytes(json_format.ParseDict(reading(1, note), proto_cls()).SerializeToString())

    def plain_json(note: str) -> bytes:
        return json.dumps(reading(1, note), separators=(",", ":")).encode()

    return [
        ("AVRO / JSON", SchemaSpec(SchemaType.AVRO, AVRO), Encoding.JSON, avro_json(1, size)),
        ("AVRO / BINARY", SchemaSpec(SchemaType.AVRO, AVRO), Encoding.BINARY, avro_binary(1, size)),
        ("PROTOCOL_BUFFER / JSON", SchemaSpec(SchemaType.PROTOCOL_BUFFER, PROTO), Encoding.JSON,
         _padded(proto_json, size)),
        ("PROTOCOL_BUFFER / BINARY", SchemaSpec(SchemaType.PROTOCOL_BUFFER, PROTO), Encoding.BINARY,
         _padded(proto_binary, size)),
        ("JSON_SCHEMA / JSON", SchemaSpec(SchemaType.JSON_SCHEMA, JSON_SCHEMA), Encoding.JSON,
         _padded(plain_json, size)),
    ]


def _per_core(checker: Checker, encoding: Encoding, data: bytes, seconds: float) -> tuple[float, int]:
    """Checks per CPU second of this thread, and how many checks were timed."""
    check_message(checker, data, encoding)  # warm
    done, batch = 0, 200
    start = time.process_time()
    while (spent := time.process_time() - start) < seconds:
        for _ in range(batch):
            check_message(checker, data, encoding)
        done += batch
    return done / spent, done


def validation_throughput(seconds: float = 1.0, size: int = KIB) -> list[dict[str, Any]]:
    """One row per type and encoding: the message size and the checks per second on one core."""
    rows = []
    for label, spec, encoding, data in samples(size):
        per_core, timed = _per_core(compile_spec(spec), encoding, data, seconds)
        rows.append({"schema": label, "message_bytes": len(data), "checks": timed,
                     "per_core_msgs_s": round(per_core), "us_per_message": round(1e6 / per_core, 1)})
    return rows


def publish_overhead(seconds: float = 1.0, per_request: int = 100) -> dict[str, Any]:
    """What checking adds to one publish request of ``per_request`` 1 KiB Avro JSON messages (the checks and the
    three attributes, as publish runs them), in CPU ms and in Lambda $ per million messages."""
    spec = SchemaSpec(SchemaType.AVRO, AVRO)
    revision = SchemaRevision("projects/bench/schemas/reading", spec.type, spec.definition, "bench000", "", 0.0)
    checkers = [(revision, compile_spec(spec))]
    messages = [NewMessage(avro_json(i), {"ts": "0"}) for i in range(per_request)]
    done = 0
    start = time.process_time()
    while (spent := time.process_time() - start) < seconds:
        conforming(checkers, Encoding.JSON, messages)
        done += 1
    ms = spent / done * 1000
    gb_s_per_message = ms / 1000 / per_request * pricing.LAMBDA_MEMORY_GB
    return {"messages_per_request": per_request, "cpu_ms_per_request": round(ms, 3),
            "lambda_usd_per_million": round(gb_s_per_message * pricing.PRICES["lambda_gb_s"].each * 1e6, 5)}


def scenario_payloads(size: int, count: int = 16) -> list[str]:
    """A-schema's bodies: distinct 1 KiB Avro JSON messages of :data:`AVRO`, base64-encoded for the wire."""
    return [base64.b64encode(avro_json(i, size)).decode() for i in range(count)]


def measure(seconds: float) -> dict[str, Any]:
    """Both figures: checks per core for each type and encoding, and what checking adds to a publish."""
    return {"per_core": validation_throughput(seconds), "publish_overhead": publish_overhead(seconds)}


def target(found: dict[str, Any]) -> dict[str, Any]:
    """The target row: Avro JSON checks per second on one core."""
    value = next((r["per_core_msgs_s"] for r in found["per_core"] if r["schema"] == "AVRO / JSON"), None)
    return {"target": f"Avro JSON validation >= {TARGET_AVRO_JSON_PER_CORE:,} msg/s per core (1 KiB)",
            "value": value, "limit": TARGET_AVRO_JSON_PER_CORE,
            "met": value is not None and value >= TARGET_AVRO_JSON_PER_CORE}


def validation_table(found: dict[str, Any] | None) -> Table | None:
    if not found:
        return None
    rows, overhead = found["per_core"], found["publish_overhead"]
    title = (f"Schema validation on one core (1 KiB messages, CPU time of one thread); a publish of "
             f"{overhead['messages_per_request']} Avro JSON messages: +{overhead['cpu_ms_per_request']} ms CPU, "
             f"+${overhead['lambda_usd_per_million']:.5f} Lambda per million messages")
    table = Table(title=title)
    for col in ("schema / encoding", "message bytes", "msg/s per core", "µs per message"):
        table.add_column(col, justify="left" if col.startswith("schema") else "right")
    for r in rows:
        table.add_row(r["schema"], str(r["message_bytes"]), f"{r['per_core_msgs_s']:,}", f"{r['us_per_message']}")
    return table
