"""Writes of single DynamoDB items shared by the stores."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from chalicelib.core.errors import NotFound
from chalicelib.store.errors import aws_errors, client_error, code_of


def delete_existing(ddb: Any, table: str, key: dict[str, Any], what: str, not_found: str) -> None:
    """Delete the item at ``key`` if it exists; NotFound(``not_found``) if it does not (one conditional
    DeleteItem, so a concurrent delete is told apart from a successful one)."""
    try:
        with aws_errors(what):
            ddb.delete_item(TableName=table, Key=key, ConditionExpression="attribute_exists(pk)")
    except ClientError as exc:
        if code_of(exc) == "ConditionalCheckFailedException":
            raise NotFound(not_found) from None
        raise client_error(exc, what) from exc
