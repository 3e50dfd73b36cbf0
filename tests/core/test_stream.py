"""The core's TokenStream through Python: outcomes, rollback, tokens of every kind."""

from __future__ import annotations

import threading

import pytest

import inert
from tools import closed, committed, kinds, malformed

CALL = '<tool_call>{"name": "f", "arguments": {"x": "é"}}</tool_call>'


def test_call_lifecycle_and_commit_key() -> None:
    s = inert.TokenStream("hermes", "t")
    out = s.draft(["hi ", CALL[:7], CALL[7:30], CALL[30:]])
    assert kinds(out) == ["call_closed"]
    (call,) = closed(out)
    assert (call.start, call.end, call.span, call.name, call.arguments) == (1, 4, (1, 4), "f", {"x": "é"})
    assert (call.block, call.index, call.call_id) == (0, 0, None)
    assert call.raw_arguments == '{"x": "é"}'
    assert call.commit_key == inert.commit_key("t", ["hi ", CALL[:7], CALL[7:30], CALL[30:]])
    assert call.commit_key.startswith("ck1-") and len(call.commit_key) == 36
    out = s.verify(4)
    assert kinds(out) == ["call_committed"]
    assert committed(out)[0] is call, "the committed call is the object that closed"
    assert s.accepted_text() == ("hi " + CALL).encode()


def test_outcomes_match_as_patterns() -> None:
    s = inert.TokenStream("hermes", "t")
    match s.draft([CALL]):
        case [inert.CallClosed(call)]:
            assert call.name == "f"
        case other:
            pytest.fail(f"unexpected outcomes {other}")


def test_rejected_tokens_stay_in_the_ledger_for_audit() -> None:
    s = inert.TokenStream("hermes", "t")
    s.draft(["a", "b", "c", "d"])
    s.verify(1, "B")
    assert (s.accepted_len, s.pending_len, s.ledger_len) == (2, 0, 5)
    assert [s.token_state(i) for i in range(5)] == ["accepted", "rejected", "rejected", "rejected", "accepted"]
    assert s.token_piece(1) == b"b"
    assert s.rejected_runs() == [(1, 4)]
    assert s.accepted_text() == b"aB"


def test_utf8_split_across_byte_pieces() -> None:
    data = CALL.encode()
    cut = data.index("é".encode()) + 1  # inside the two-byte character
    s = inert.TokenStream()
    assert closed(s.draft([data[:cut], data[cut:]]))[0].arguments == {"x": "é"}


def test_invalid_utf8_in_a_block_is_malformed_not_raised() -> None:
    s = inert.TokenStream()
    body = b'{"name": "f\xff"}'
    out = s.draft([b"<tool_call>" + body + b"</tool_call>"]) + s.verify(1)
    (m,) = malformed(out)
    assert (m.kind, m.offset, m.span) == ("invalid_utf8", body.index(b"\xff"), (0, 1))
    assert "UTF-8" in m.reason


def test_special_token_ids_are_delimiters_and_text_still_matches() -> None:
    vocab = {0: '{"name": "f"}', 1: "<tool_", 2: "call>", 3: "</tool_call>"}
    special = {151657: "<tool_call>", 151658: "</tool_call>"}
    s = inert.TokenStream("hermes", "t", vocab=vocab, special_tokens=special)
    by_id = s.draft([151657, 0, 151658])
    by_text = s.draft([1, 2, 0, 3])
    assert [c.name for c in closed(by_id + by_text)] == ["f", "f"]
    assert s.live_text() == b'<tool_call>{"name": "f"}</tool_call>' * 2


def test_vocab_as_a_sequence() -> None:
    s = inert.TokenStream(vocab=["<tool_call>", '{"name": "g"}', "</tool_call>"])
    assert closed(s.draft([0, 1, 2]))[0].name == "g"


def test_closer_retracted_block_closes_again_under_the_same_block() -> None:
    s = inert.TokenStream()
    (first,) = closed(s.draft(['<tool_call>{"name": "f"}', "</tool_call>"]))
    out = s.verify(1)
    assert kinds(out) == ["call_retracted"] and isinstance(out[0], inert.CallRetracted) and out[0].call is first
    (again,) = closed(s.draft(["</tool_call>"]))
    assert again.block == first.block and again is not first


def test_rejecting_only_an_open_block_says_nothing() -> None:
    """A block that never closed announced no call, so there is nothing to retract."""
    s = inert.TokenStream()
    assert s.draft(["<tool_call>", '{"name": "f"}']) == []
    assert s.verify(0) == []
    assert kinds(s.draft(['<tool_call>{"name": "g"}</tool_call>']) + s.verify(1)) == ["call_closed", "call_committed"]


def test_oversized_block_is_malformed() -> None:
    s = inert.TokenStream(max_block_bytes=32)
    out = s.draft(['<tool_call>{"name": "f", "arguments": {"x": "' + "y" * 64 + '"}}</tool_call>'])
    assert out == [], "a malformed block is reported once its tokens are accepted"
    (m,) = malformed(s.verify(1))
    assert m.kind == "too_large" and "max_block_bytes" in m.reason


def test_unterminated_block_is_malformed_at_finish() -> None:
    s = inert.TokenStream()
    s.draft(['<tool_call>{"name": "f"'])
    s.verify(1)
    out = s.finish()
    assert kinds(out) == ["block_malformed"]
    assert isinstance(out[0], inert.BlockMalformed)
    assert out[0].malformed.kind == "unterminated"
    assert out[0].malformed.commit_key == inert.commit_key("", ['<tool_call>{"name": "f"'])
    assert s.finished


def test_two_blocks_in_one_token_get_distinct_keys() -> None:
    s = inert.TokenStream("hermes", "t")
    a, b = closed(s.draft([CALL + CALL]))
    assert a.commit_key != b.commit_key
    assert b.commit_key == inert.commit_key("t", [CALL + CALL], ordinal=1)


def test_a_structural_block_keeps_its_key_whatever_confirms_it() -> None:
    """Invariant 3: the key is the block's own last token's; a rejected confirming token retracts nothing."""
    call = ['{"name": "get", ', '"parameters": {"q": 1}}']
    key = inert.commit_key("t", call)
    s = inert.TokenStream("llama3_json", "t")
    out = s.draft([*call, " x"]) + s.verify(2, " ") + s.finish()
    assert kinds(out) == ["call_closed", "call_committed"]
    assert [o.call.commit_key for o in out if not isinstance(o, inert.BlockMalformed)] == [key, key]
    s = inert.TokenStream("llama3_json", "t")
    out = s.draft(call) + s.verify(2) + s.draft([" x"]) + s.verify(0) + s.finish()
    assert kinds(out) == ["call_closed", "call_committed"], "the end of the turn confirms it"
    assert isinstance(out[1], inert.CallCommitted) and out[1].call.commit_key == key


def test_formats_and_parse() -> None:
    assert "hermes" in inert.formats()
    calls = inert.parse("x" + CALL + CALL.replace('"f"', '"g"'))
    assert [c.name for c in calls if isinstance(c, inert.Call)] == ["f", "g"]


def test_one_stream_used_from_threads_never_crashes() -> None:
    """A stream is one per sequence; concurrent misuse raises, it does not corrupt."""
    s = inert.TokenStream()
    errors: list[BaseException] = []

    def hammer() -> None:
        for _ in range(300):
            try:
                s.draft(["a", "b"])
                s.verify(s.pending_len)
            except (RuntimeError, inert.InertError) as e:
                errors.append(e)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Each call ran whole or raised: windows are pairs and verify counts are even.
    text = s.accepted_text()
    assert text == b"ab" * (len(text) // 2)
    states = [s.token_state(i) for i in range(s.ledger_len)]
    assert states.count(inert.TokenState.ACCEPTED) == s.accepted_len
    assert states.count(inert.TokenState.UNDECIDED) == s.pending_len


@pytest.mark.parametrize(
    "pieces", [["<tool_call>", "{", '"name": "f"}', "</tool_call>"], ["<", 'tool_call>{"name":"f"}</', "tool_call>"]]
)
def test_delimiters_split_at_any_byte(pieces: list[str]) -> None:
    assert kinds(inert.TokenStream().draft(pieces)) == ["call_closed"]
