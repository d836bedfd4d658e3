"""Typed request values: what the api layer parses a request body into, and what services take.

Field names are Python's; the wire spellings (camelCase and snake_case, proto3 JSON's string forms
of numbers and booleans) are read in api/requests.py, never in service/.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PullRequest:
    max_messages: int
    return_immediately: bool = False


@dataclass(frozen=True)
class AcknowledgeRequest:
    ack_ids: tuple[str, ...]


@dataclass(frozen=True)
class ModifyAckDeadlineRequest:
    ack_ids: tuple[str, ...]
    ack_deadline_seconds: int


@dataclass(frozen=True)
class PageRequest:
    """A list call's paging: ``size`` already clamped to the API's bounds; ``token`` as the client sent it."""

    size: int
    token: str = ""
