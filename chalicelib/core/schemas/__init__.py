"""Schemas: the resource model, the three schema languages (Avro, Protocol Buffers, JSON Schema) compiled into
message validators, and the per-revision cache of compiled schemas. Pure: no I/O."""
