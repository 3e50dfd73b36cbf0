"""The core's TokenStream through Python: events, rollback, tokens of every kind."""

from __future__ import annotations

import threading

import pytest

import inert

CALL = '<tool_call>{"name": "f", "arguments": {"x": "é"}}</tool_call>'


def kinds(events: list[inert.BlockEvent]) -> list[str]:
    return [e.kind for e in events]


def test_block_lifecycle_and_commit_key() -> None:
    s = inert.TokenStream("hermes", "t")
    evs = s.draft(["hi ", CALL[:7], CALL[7:30], CALL[30:]])
    assert kinds(evs) == ["opened", "closed"]
    closed = evs[1]
    assert (closed.start, closed.end, closed.name, closed.arguments) == (1, 4, "f", {"x": "é"})
    assert closed.raw_arguments == '{"x": "é"}'
    assert closed.commit_key == inert.commit_key("t", ["hi ", CALL[:7], CALL[7:30], CALL[30:]])
    assert closed.commit_key.startswith("ck1-") and len(closed.commit_key) == 36
    assert kinds(s.verify(4)) == ["accepted"]
    assert s.accepted_text() == ("hi " + CALL).encode()


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
    evs = s.draft([data[:cut], data[cut:]])
    assert evs[-1].arguments == {"x": "é"}


def test_invalid_utf8_in_a_block_is_malformed_not_raised() -> None:
    s = inert.TokenStream()
    evs = s.draft([b'<tool_call>{"name": "f\xff"}</tool_call>'])
    assert evs[-1].kind == "malformed" and "UTF-8" in (evs[-1].reason or "")


def test_special_token_ids_are_delimiters_and_text_still_matches() -> None:
    vocab = {0: '{"name": "f"}', 1: "<tool_", 2: "call>", 3: "</tool_call>"}
    special = {151657: "<tool_call>", 151658: "</tool_call>"}
    s = inert.TokenStream("hermes", "t", vocab=vocab, special_tokens=special)
    by_id = s.draft([151657, 0, 151658])
    by_text = s.draft([1, 2, 0, 3])
    assert [e.name for e in by_id + by_text if e.kind == "closed"] == ["f", "f"]
    assert s.live_text() == b'<tool_call>{"name": "f"}</tool_call>' * 2


def test_vocab_as_a_sequence() -> None:
    s = inert.TokenStream(vocab=["<tool_call>", '{"name": "g"}', "</tool_call>"])
    assert s.draft([0, 1, 2])[-1].name == "g"


def test_closer_retracted_block_reopens_under_the_same_id() -> None:
    s = inert.TokenStream()
    evs = s.draft(['<tool_call>{"name": "f"}', "</tool_call>"])
    block = evs[-1].block
    assert kinds(s.verify(1)) == ["retracted"]
    evs = s.draft(["</tool_call>"])
    assert [(e.kind, e.block) for e in evs] == [("closed", block)]


def test_oversized_block_is_malformed() -> None:
    s = inert.TokenStream(max_block_bytes=32)
    evs = s.draft(['<tool_call>{"name": "f", "arguments": {"x": "' + "y" * 64 + '"}}</tool_call>'])
    assert kinds(evs) == ["opened", "malformed"]
    assert "max_block_bytes" in (evs[1].reason or "")


def test_unterminated_block_is_malformed_at_finish() -> None:
    s = inert.TokenStream()
    s.draft(['<tool_call>{"name": "f"'])
    s.verify(1)
    evs = s.finish()
    assert kinds(evs) == ["malformed", "accepted"]
    assert s.finished


def test_two_blocks_in_one_token_get_distinct_keys() -> None:
    s = inert.TokenStream("hermes", "t")
    evs = [e for e in s.draft([CALL + CALL]) if e.kind == "closed"]
    assert evs[0].commit_key != evs[1].commit_key
    assert evs[1].commit_key == inert.commit_key("t", [CALL + CALL], ordinal=1)


def test_formats_and_parse() -> None:
    assert "hermes" in inert.formats()
    calls = inert.parse("x" + CALL + CALL.replace('"f"', '"g"'))
    assert [c.name for c in calls] == ["f", "g"]


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
    assert states.count("accepted") == s.accepted_len and states.count("undecided") == s.pending_len


@pytest.mark.parametrize("pieces", [["<tool_call>", "{", '"name": "f"}', "</tool_call>"], ["<", "tool_call>{\"name\":\"f\"}</", "tool_call>"]])
def test_delimiters_split_at_any_byte(pieces: list[str]) -> None:
    assert [e.kind for e in inert.TokenStream().draft(pieces)] == ["opened", "closed"]
