"""The bounds on what a schema definition may hold and on the work one message check may do.

A definition is data a client sends (docs/schemas.md, "Definitions are data"): with these bounds, compiling one
costs time linear in its size (at most MAX_DEFINITION_BYTES, core/schemas/model.py), and checking a message
against it costs time linear in the message, whatever the definition says.
"""

from __future__ import annotations

MAX_DEFINITION_DEPTH = 64  # nesting of JSON objects and arrays in an Avro or JSON Schema definition
MAX_ENUM_VALUES = 10_000  # the values of one enum: JSON Schema ``enum``, Avro ``symbols``, a .proto ``enum``

# JSON Schema. Meta-validating a subschema costs about 0.13 ms (jsonschema against the draft's meta-schema: 10,000
# empty subschemas took 1.3 s), so the node count bounds compiling at about 0.7 s.
MAX_JSON_SCHEMA_NODES = 5_000  # subschemas (objects and booleans in schema positions) of one definition
MAX_IN_PLACE_FANOUT = 10_000  # subschemas one value meets through allOf/anyOf/oneOf/not/if/then/else/$ref
MAX_PATTERNS = 64  # distinct regular expressions (pattern, patternProperties) in one definition
MAX_PATTERN_CHARS = 1_000
MAX_PATTERN_PROGRAM = 10_000  # RE2 instructions of one compiled pattern
PATTERN_MAX_MEM = 1024 * 1024  # RE2's memory for one pattern: its program and its DFA cache

# The work budget of checking messages against a JSON Schema (core/schemas/budget.py). A unit is one keyword
# evaluated (about 3 us of CPU measured, jsonschema's descent included), four characters of an error message
# (jsonschema's messages quote the failing value, and a check keeps its errors), or 1,024 (text character x RE2
# instruction) steps of a pattern match. A check may spend CHECK_BASE_UNITS + CHECK_UNITS_PER_BYTE per byte of the
# message (of all the request's messages when a publish checks them together), and never more than
# CHECK_MAX_UNITS: its time, and the error text it keeps, are linear in the message and bounded (about 15 s).
CHECK_BASE_UNITS = 10_000
CHECK_UNITS_PER_BYTE = 4
CHECK_MAX_UNITS = 5_000_000
ERROR_CHARS_PER_UNIT = 4
PATTERN_STEPS_PER_UNIT = 1024
