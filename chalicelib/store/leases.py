"""Delivery leases in DynamoDB: one item per pull response, changed only by conditional writes.

Item: ``sub`` (hash) + ``lease`` (range), ``deadline`` (epoch s), ``n`` (messages leased),
``acked`` (count acknowledged), ``ttl``. A pull creates it with ``attribute_not_exists`` (a lease id
is never reused); an ack or modifyAckDeadline updates it with ``attribute_exists`` in one write per
lease per request, not one per message.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors, code_of


class LeaseStore:
    def __init__(self, config: Config) -> None:
        self._ddb = aws.client("dynamodb", config)
        self._table = config.leases_table

    def open(self, subscription: str, lease_id: str, count: int, deadline: float, expires: int) -> None:
        with aws_errors("Pull (lease)"):
            self._ddb.put_item(
                TableName=self._table,
                Item={
                    "sub": {"S": subscription},
                    "lease": {"S": lease_id},
                    "n": {"N": str(count)},
                    "acked": {"N": "0"},
                    "deadline": {"N": repr(deadline)},
                    "ttl": {"N": str(expires)},
                },
                ConditionExpression="attribute_not_exists(lease)",
            )

    def settle(self, subscription: str, lease_id: str, acked: int, deadline: float | None) -> bool:
        """Record acks and/or a new deadline; False when the lease no longer exists."""
        sets = ["acked = acked + :a"]
        values = {":a": {"N": str(acked)}}
        if deadline is not None:
            sets.append("deadline = :d")
            values[":d"] = {"N": repr(deadline)}
        try:
            with aws_errors("Ack (lease)"):
                self._ddb.update_item(
                    TableName=self._table,
                    Key={"sub": {"S": subscription}, "lease": {"S": lease_id}},
                    UpdateExpression="SET " + ", ".join(sets),
                    ExpressionAttributeValues=values,
                    ConditionExpression="attribute_exists(lease)",
                )
        except ClientError as exc:
            if code_of(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True
