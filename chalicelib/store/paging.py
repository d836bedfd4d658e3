"""Paged and counted Queries of one partition of a table (the resources table's listings)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chalicelib.core.errors import InvalidArgument
from chalicelib.core.wire.pagetokens import PageTokens
from chalicelib.store.errors import aws_errors

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import QueryInputTypeDef

    from chalicelib.store.aws import Item


def _start_key(pk: str, prefix: str, position: dict[str, str] | None) -> Item | None:
    """The ExclusiveStartKey of a verified page token's position (the sort key where the last page ended)."""
    if position is None:
        return None
    sort_key = position.get("sk", "")
    if set(position) != {"sk"} or not sort_key.startswith(prefix):
        raise InvalidArgument("Invalid page token")
    return {"pk": {"S": pk}, "sk": {"S": sort_key}}


class PagedTable:
    """Counts and pages of one table's partitions; page tokens are signed by ``tokens``."""

    def __init__(self, ddb: DynamoDBClient, table: str, tokens: PageTokens) -> None:
        self._ddb = ddb
        self._table = table
        self._tokens = tokens

    def count(self, pk: str, prefix: str) -> int:
        return _count(self._ddb, self._table, pk, prefix)

    def page(self, pk: str, prefix: str, page_size: int, token: str) -> tuple[list[Item], str]:
        """One page (``page_size`` 0: every item) of the items under ``pk`` whose sort key has ``prefix``."""
        scope = f"{pk}\n{prefix}"
        start = _start_key(pk, prefix, self._tokens.decode(scope, token))
        items = _query(self._ddb, self._table, pk, prefix, page_size, start)
        if page_size and len(items) > page_size:
            del items[page_size:]
            return items, self._tokens.encode(scope, {"sk": items[-1]["sk"]["S"]})
        return items, ""


def _count(ddb: DynamoDBClient, table: str, pk: str, prefix: str) -> int:
    """How many items under ``pk`` have a sort key with ``prefix`` (Select=COUNT: no item is returned)."""
    args: QueryInputTypeDef = {
        "TableName": table,
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
        "ExpressionAttributeValues": {":pk": {"S": pk}, ":prefix": {"S": prefix}},
        "Select": "COUNT",
    }
    total = 0
    with aws_errors("Count"):
        while True:
            resp = ddb.query(**args)
            total += resp.get("Count", 0)
            last = resp.get("LastEvaluatedKey")
            if not last:
                return total
            args["ExclusiveStartKey"] = last


def _query(ddb: DynamoDBClient, table: str, pk: str, prefix: str, page_size: int, start: Item | None) -> list[Item]:
    """The items under ``pk`` with ``prefix`` from ``start``: every one, or one more than ``page_size`` (which
    tells whether another page follows)."""
    args: QueryInputTypeDef = {
        "TableName": table,
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
        "ExpressionAttributeValues": {":pk": {"S": pk}, ":prefix": {"S": prefix}},
        "ConsistentRead": True,
    }
    if start:
        args["ExclusiveStartKey"] = start
    items: list[Item] = []
    with aws_errors("List"):
        while True:
            if page_size:
                args["Limit"] = page_size + 1 - len(items)
            resp = ddb.query(**args)
            items.extend(resp.get("Items", []))
            last = resp.get("LastEvaluatedKey")
            if not last or (page_size and len(items) > page_size):
                return items
            args["ExclusiveStartKey"] = last
