"""The base of every resource model in Google's JSON shape: camelCase on the wire, snake_case in Python, unknown
fields refused (core/wire/models.py)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True, mode="json")
