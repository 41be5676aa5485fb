"""Protocol 4: the harness sends policy values from the catalogue; a peer names knobs, never catalogue names."""
from __future__ import annotations

from acemq_interop.spec.catalogue import catalogue, check_offer, offer_from_knobs, policy_for


def _all_knobs() -> dict[str, list[str]]:
    return {side: list(values) for side, values in catalogue().policies.items()}


def test_a_mutant_is_sent_as_its_policy_values_on_the_side_it_acts_on() -> None:
    assert policy_for("go", "requester.open", "current", ["native-only"]) == {"write_header_address": False}
    assert policy_for("go", "responder.start", "current", ["native-only"]) == {}
    assert policy_for("go", "responder.start", "current", ["no-strip"]) == {"strip_engine_headers": False}
    assert policy_for("go", "requester.open") == {}
    assert policy_for("go", "load", "current", ["queue-per-request"]) == {"reply_queue_per_request": True}, \
        "a load runs the peer's requester: a requester mutant reaches it"


def test_a_profile_is_sent_as_that_bindings_history_then_the_mutant_on_top() -> None:
    assert policy_for("dotnet", "requester.open", "0.3.0") == {"write_header_address": False, "read_error_header": False}
    assert policy_for("go", "responder.start", "0.3.0") == {"read_order": ["header"]}
    assert policy_for("mybinding", "requester.open", "0.3.0") == {}  # no history: as it ships
    both = policy_for("dotnet", "requester.open", "0.3.0", ["timeouts-not-counted"])
    assert both == {"write_header_address": False, "read_error_header": False, "count_timeouts": False}


def test_every_knob_offers_every_mutant_and_the_bindings_own_profiles() -> None:
    profiles, mutants = offer_from_knobs("dotnet", {"knobs": _all_knobs()})
    assert set(mutants) == set(catalogue().mutants)
    assert set(profiles) == {"current", "0.7.12", "0.5.0", "0.3.0"}
    profiles, _ = offer_from_knobs("mybinding", {"knobs": _all_knobs()})
    assert profiles == ["current"]


def test_a_mutant_needing_a_knob_not_listed_or_a_value_out_of_reach_is_not_offered() -> None:
    knobs = _all_knobs()
    knobs["requester"].remove("write_header_address")
    _, mutants = offer_from_knobs("go", {"knobs": knobs, "unreachable": {"native_address": ["empty"]}})
    assert "native-only" not in mutants and "empty-native-address" not in mutants
    assert "mismatched-addresses" in mutants  # native_address: stale is reachable
    profiles, _ = offer_from_knobs("go", {"knobs": knobs})
    assert "0.3.0" in profiles  # go's 0.3.0 sets write_native_address only
    profiles, _ = offer_from_knobs("dotnet", {"knobs": knobs})
    assert "0.3.0" not in profiles  # dotnet's 0.3.0 needs write_header_address


def test_no_knobs_is_the_binding_as_it_ships_and_an_unknown_knob_is_refused() -> None:
    assert offer_from_knobs("mybinding", {"knobs": {}}) == (["current"], [])
    assert check_offer("x", {"knobs": {"requester": ["write_header_adress"]}}) == [
        "names requester knob 'write_header_adress', which the catalogue does not have"]
