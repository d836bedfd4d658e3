"""Projects, users and token hashes in the resources table.

Items (hash key ``pk``, range key ``sk``):
- project: pk=``projects``       sk=``project#{name}``  doc (core/access/accounts.Project as JSON)
- user:    pk=``users``          sk=``user#{name}``     doc (core/access/accounts.User as JSON), token_hash
- token:   pk=``token#{hash}``   sk=``token``           user (the name of the token's user)

Only the keyed hash of a token is stored (core/access/identity.TokenHasher). A user and its token item change
together, in one transaction: creating a user puts both, a refresh swaps the token item, a deletion
removes both, so a token stops resolving the moment its user is deleted or refreshed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from chalicelib.config import Config
from chalicelib.core.access.accounts import Project, User
from chalicelib.core.errors import AlreadyExists, NotFound
from chalicelib.store import aws
from chalicelib.store.errors import aws_errors, client_error, code_of
from chalicelib.store.items import delete_existing

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import QueryInputTypeDef

    from chalicelib.store.aws import Item

_PROJECTS = "projects"
_USERS = "users"


def _project_key(name: str) -> Item:
    return {"pk": {"S": _PROJECTS}, "sk": {"S": f"project#{name}"}}


def _user_key(name: str) -> Item:
    return {"pk": {"S": _USERS}, "sk": {"S": f"user#{name}"}}


def _token_key(token_hash: str) -> Item:
    return {"pk": {"S": f"token#{token_hash}"}, "sk": {"S": "token"}}


def _conditions_failed(exc: ClientError) -> bool:
    if code_of(exc) == "ConditionalCheckFailedException":
        return True
    reasons = exc.response.get("CancellationReasons", [])
    return code_of(exc) == "TransactionCanceledException" and any(
        r.get("Code") == "ConditionalCheckFailed" for r in reasons)


class IdentityStore:
    def __init__(self, config: Config) -> None:
        self._ddb = aws.dynamodb(config)
        self._table = config.resources_table

    # -- projects -------------------------------------------------------------------------------------
    def get_project(self, name: str) -> Project | None:
        with aws_errors("GetProject"):
            item = self._ddb.get_item(TableName=self._table, Key=_project_key(name), ConsistentRead=True).get("Item")
        return Project.from_json(item["doc"]["S"]) if item else None

    def put_project(self, project: Project, *, create: bool) -> None:
        """Create (refused if it exists) or replace (refused if it does not) a project."""
        condition = "attribute_not_exists(pk)" if create else "attribute_exists(pk)"
        try:
            with aws_errors("PutProject"):
                self._ddb.put_item(TableName=self._table, Item={**_project_key(project.name),
                                                                "doc": {"S": project.to_json()}},
                                   ConditionExpression=condition)
        except ClientError as exc:
            if _conditions_failed(exc):
                raise AlreadyExists("Project already exists") if create else NotFound("Project doesn't exist") \
                    from None
            raise client_error(exc, "PutProject") from exc

    def delete_project(self, name: str) -> None:
        delete_existing(self._ddb, self._table, _project_key(name), "DeleteProject", "Project doesn't exist")

    def list_projects(self) -> list[Project]:
        return [Project.from_json(i["doc"]["S"]) for i in self._all(_PROJECTS)]

    # -- users ------------------------------------------------------------------------------------------
    def get_user(self, name: str) -> tuple[User, str] | None:
        """A user and its token hash."""
        with aws_errors("GetUser"):
            item = self._ddb.get_item(TableName=self._table, Key=_user_key(name), ConsistentRead=True).get("Item")
        return (User.from_json(item["doc"]["S"]), item["token_hash"]["S"]) if item else None

    def user_for_token(self, token_hash: str) -> User | None:
        """The user whose current token has this hash (two strongly consistent reads; callers cache)."""
        with aws_errors("GetToken"):
            item = self._ddb.get_item(TableName=self._table, Key=_token_key(token_hash),
                                      ConsistentRead=True).get("Item")
        if item is None:
            return None
        found = self.get_user(item["user"]["S"])
        return found[0] if found is not None and found[1] == token_hash else None

    def create_user(self, user: User, token_hash: str) -> None:
        try:
            with aws_errors("CreateUser"):
                self._ddb.transact_write_items(TransactItems=[
                    {"Put": {"TableName": self._table, "ConditionExpression": "attribute_not_exists(pk)",
                             "Item": {**_user_key(user.name), "doc": {"S": user.to_json()},
                                      "token_hash": {"S": token_hash}}}},
                    {"Put": {"TableName": self._table, "Item": {**_token_key(token_hash), "user": {"S": user.name}}}},
                ])
        except ClientError as exc:
            if _conditions_failed(exc):
                raise AlreadyExists("User already exists") from None
            raise client_error(exc, "CreateUser") from exc

    def put_user(self, user: User) -> None:
        """Replace a user's fields (its token stays)."""
        try:
            with aws_errors("UpdateUser"):
                self._ddb.update_item(TableName=self._table, Key=_user_key(user.name), UpdateExpression="SET doc = :d",
                                      ExpressionAttributeValues={":d": {"S": user.to_json()}},
                                      ConditionExpression="attribute_exists(pk)")
        except ClientError as exc:
            if _conditions_failed(exc):
                raise NotFound("User doesn't exist") from None
            raise client_error(exc, "UpdateUser") from exc

    def replace_token(self, user: User, old_hash: str, new_hash: str) -> None:
        """Swap a user's token: the old one stops resolving in the same transaction."""
        try:
            with aws_errors("RefreshToken"):
                self._ddb.transact_write_items(TransactItems=[
                    {"Update": {"TableName": self._table, "Key": _user_key(user.name),
                                "UpdateExpression": "SET token_hash = :new, doc = :d",
                                "ConditionExpression": "token_hash = :old",
                                "ExpressionAttributeValues": {":new": {"S": new_hash}, ":old": {"S": old_hash},
                                                              ":d": {"S": user.to_json()}}}},
                    {"Delete": {"TableName": self._table, "Key": _token_key(old_hash)}},
                    {"Put": {"TableName": self._table, "Item": {**_token_key(new_hash), "user": {"S": user.name}}}},
                ])
        except ClientError as exc:
            if _conditions_failed(exc):
                raise NotFound("User doesn't exist") from None
            raise client_error(exc, "RefreshToken") from exc

    def delete_user(self, name: str, token_hash: str) -> None:
        try:
            with aws_errors("DeleteUser"):
                self._ddb.transact_write_items(TransactItems=[
                    {"Delete": {"TableName": self._table, "Key": _user_key(name),
                                "ConditionExpression": "attribute_exists(pk)"}},
                    {"Delete": {"TableName": self._table, "Key": _token_key(token_hash)}},
                ])
        except ClientError as exc:
            if _conditions_failed(exc):
                raise NotFound("User doesn't exist") from None
            raise client_error(exc, "DeleteUser") from exc

    def list_users(self) -> list[User]:
        """Every user, by name (the user list of a service is small; callers page it)."""
        return [User.from_json(i["doc"]["S"]) for i in self._all(_USERS)]

    def _all(self, pk: str) -> list[Item]:
        args: QueryInputTypeDef = {"TableName": self._table, "KeyConditionExpression": "pk = :pk",
                                   "ExpressionAttributeValues": {":pk": {"S": pk}}, "ConsistentRead": True}
        items: list[Item] = []
        with aws_errors("List"):
            while True:
                resp = self._ddb.query(**args)
                items.extend(resp.get("Items", []))
                last = resp.get("LastEvaluatedKey")
                if not last:
                    return items
                args["ExclusiveStartKey"] = last
