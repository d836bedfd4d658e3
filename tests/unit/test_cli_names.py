"""`metro`'s names: short ids resolved against the project, full names (Google's or AMS's) taken as they are."""

from __future__ import annotations

import pytest

from chalicelib.cli import names
from chalicelib.cli.names import BadName


def test_a_short_id_is_resolved_against_the_project() -> None:
    assert names.resolve("orders", "demo", "topics") == "projects/demo/topics/orders"
    assert names.resolve("billing", "demo", "subscriptions") == "projects/demo/subscriptions/billing"


def test_full_names_are_kept_and_ams_s_leading_slash_dropped() -> None:
    assert names.resolve("projects/other/topics/orders", "demo", "topics") == "projects/other/topics/orders"
    assert names.resolve("/projects/p/topics/t", None, "topics") == "projects/p/topics/t"


@pytest.mark.parametrize("value", ["projects/p/subscriptions/s", "projects/p/topics", "projects//topics/t",
                                   "a/b", "", "-x", "projects/p/topics/t/extra"])
def test_names_of_the_wrong_shape_are_refused(value: str) -> None:
    with pytest.raises(BadName):
        names.resolve(value, "demo", "topics")


def test_a_short_id_without_a_project_says_how_to_give_one() -> None:
    with pytest.raises(BadName, match="--project"):
        names.resolve("orders", None, "topics")
    assert names.resolve("projects/p/topics/t", None, "topics") == "projects/p/topics/t"


def test_short_and_project_of() -> None:
    assert names.short("projects/p/topics/t") == "t"
    assert names.project_of("projects/p/topics/t") == "p"
