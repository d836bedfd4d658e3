"""How `make fuzz` steers generated path parameters onto the seeded resources (bench/fuzz_seed.py)."""

from bench.fuzz_seed import SEEDED, destroys_seeded_state, steerable, steered
from chalicelib.api.openapi.description import PATH_PARAMETERS


def test_a_valid_generated_name_can_be_swapped_for_the_seeded_one() -> None:
    generated = {"project": "p0", "subscription": "abc"}
    assert steered(generated, PATH_PARAMETERS) == [generated, {"project": SEEDED["project"],
                                                                "subscription": SEEDED["subscription"]}]


def test_an_invalid_name_keeps_the_request_negative() -> None:
    for parameters in ({"project": "p0", "topic": "ab"},            # too short
                       {"project": "p0", "topic": "googtopic"},     # the reserved prefix
                       {"project": "-p", "topic": "fine-topic"},    # a bad project id
                       {"project": "p0", "topic": 12}):             # not a string
        assert steered(parameters, PATH_PARAMETERS) == [parameters]


def test_parameters_without_a_seeded_resource_are_left_alone() -> None:
    assert steered({}, PATH_PARAMETERS) == [{}]
    assert not steerable("revision", "r1", {})


def test_a_schema_revision_suffix_is_a_valid_schema_name() -> None:
    assert steerable("schema", "abc@r1", PATH_PARAMETERS["schema"])


def test_only_a_successful_delete_or_detach_destroys_seeded_state() -> None:
    assert destroys_seeded_state("DELETE", "/v1/projects/{project}/topics/{topic}", 200)
    assert destroys_seeded_state("POST", "/v1/projects/{project}/subscriptions/{subscription}:detach", 200)
    assert not destroys_seeded_state("DELETE", "/v1/projects/{project}/topics/{topic}", 404)
    assert not destroys_seeded_state("POST", "/v1/projects/{project}/subscriptions/{subscription}:seek", 200)
