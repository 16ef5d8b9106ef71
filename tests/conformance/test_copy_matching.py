"""The real backend pairs each successful send-back and fallback send with the copy it stored, by the key the
request names, not only by order: the broker handles one connection's requests on several threads, so copies of
sends arriving together can be stored in another order (seen: a Java client sent m1, m0, m2 back in one
millisecond and the 4.9.8 broker stored m0's copy first; paired by order, m1's copy got m0's offset and the checker
judged the reference SY-09: a retry linked to another message's origin)."""

from __future__ import annotations

from conformance.codec.message import StoredMessage, encode_properties
from conformance.history.records import WireRequest
from conformance.runner.backends.real_run import get_retry_sends, get_unanswered_sends, match_copies, match_unanswered

GROUP = "g"


def copy(key: str, at: int) -> StoredMessage:
    return StoredMessage("SCHEDULE_TOPIC_XXXX", b"", 0, at, at, {"UNIQ_KEY": key}, store_timestamp=at)


def send_back(key: str, offset: int, at: float = 5.0, code: int = 0) -> WireRequest:
    return WireRequest(at, 36, {"offset": str(offset), "originMsgId": key, "group": GROUP}, response_code=code)


def fallback(key: str, at: float = 5.0, code: int | None = 0) -> WireRequest:
    fields = {"topic": f"%RETRY%{GROUP}", "properties": encode_properties({"UNIQ_KEY": key, "TAGS": "t"})}
    return WireRequest(at, 10, fields, response_code=code)


def test_sends_of_one_instant_are_paired_with_their_own_keys_copies():
    sends = get_retry_sends([send_back("m1", 9451), send_back("m0", 9763), send_back("m2", 9607)], GROUP)
    pairs = match_copies(sends, [copy("m0", 1), copy("m2", 2), copy("m1", 3)])
    assert [(send[2], stored.properties["UNIQ_KEY"]) for send, stored in pairs] == [
        (9451, "m1"), (9763, "m0"), (9607, "m2")]


def test_a_fallback_is_paired_by_its_unique_key_and_failed_sends_stored_nothing():
    requests = [send_back("m0", 10, code=1), fallback("m0"), send_back("m1", 20)]
    sends = get_retry_sends(requests, GROUP)
    assert [(path, offset, named) for _at, path, offset, named in sends] == [("fallback", -1, "m0"), ("rpc", 20, "m1")]
    pairs = match_copies(sends, [copy("m1", 1), copy("m0", 2)])
    assert [(send[1], stored.properties["UNIQ_KEY"]) for send, stored in pairs] == [("fallback", "m0"), ("rpc", "m1")]


def test_a_send_naming_no_stored_key_takes_the_next_copy_in_store_order():
    """A client that names another id (an offset message id) in originMsgId is paired by order, as before."""
    sends = get_retry_sends([send_back("0A00", 1), send_back("0B00", 2)], GROUP)
    pairs = match_copies(sends, [copy("m1", 1), copy("m0", 2), copy("m2", 3)])
    assert [stored.properties["UNIQ_KEY"] for _send, stored in pairs] == ["m1", "m0"]


def test_an_unanswered_fallback_takes_a_copy_of_its_key_that_no_answered_send_took():
    """A Java client shutting down sent m2 back (answered), then its fallback for m2, which the proxy saw no answer to:
    the broker stored both copies. The answered sends take theirs first; the unanswered fallback takes m2's other
    copy, and one naming a key with no copy left stored nothing."""
    requests = [send_back("m0", 10), send_back("m2", 30), fallback("m2", code=None), fallback("m1", code=None),
                fallback("m0", code=1)]
    stored = [copy("m0", 1), copy("m2", 2), copy("m2", 3)]
    pairs = match_copies(get_retry_sends(requests, GROUP), stored)
    assert [(send[1], stored.store_timestamp) for send, stored in pairs] == [("rpc", 1), ("rpc", 2)]
    unanswered = get_unanswered_sends(requests, GROUP)
    assert [(path, named) for _at, path, _offset, named in unanswered] == [("fallback", "m2"), ("fallback", "m1")]
    extra = match_unanswered(unanswered, stored, pairs)
    assert [(send[3], stored.store_timestamp) for send, stored in extra] == [("m2", 3)]
