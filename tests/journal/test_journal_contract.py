"""The journal contract, once for every back end: memory (where it applies:
one process), SQLite and PostgreSQL. What the dispatcher relies on: an intent
before the call and its outcome after; a key journaled once replays its
outcome; the same key with another call is a conflict; a key whose holder
died is in doubt, where a write is never run again and an idempotent call is,
with the same idempotency key."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import inert
from journals import Backend, close, record, turn
from tools import block


def test_intent_before_the_call_outcome_after(backend: Backend) -> None:
    j = backend.open()
    r = record("ck1-a", "send", to="ana", body="héllo")
    assert j.begin(r, "t1") is None, "a new key: the tool runs"
    (e,) = j.entries()
    assert (e.commit_key, e.turn_key, e.tool, e.effect, e.arguments, e.status) == (
        "ck1-a",
        "t1",
        "send",
        "write",
        {"to": "ana", "body": "héllo"},
        None,
    )
    assert len(e.fingerprint) == 64 and e.fingerprint == inert.journal.fingerprint({"body": "héllo", "to": "ana"})
    r = dataclasses.replace(r, result={"id": [1, 2], "note": "ünïcode"})
    j.complete(r, "ok")
    (e,) = j.entries()
    assert (e.status, e.result, e.error, e.in_doubt) == ("ok", {"id": [1, 2], "note": "ünïcode"}, None, False)
    assert e.finished_at is not None and e.finished_at >= e.intent_at
    close(j)


def test_a_key_journaled_once_returns_its_outcome_to_every_later_worker(backend: Backend) -> None:
    first = backend.open()
    r = record("ck1-b", "charge", amount=5)
    assert first.begin(r, "t1") is None
    r = dataclasses.replace(r, result="charged 5")
    first.complete(r, "ok")
    close(first)
    later = backend.open()  # another worker, or the same process restarted
    prior = later.begin(record("ck1-b", "charge", amount=5), "t1")
    assert prior is not None and (prior.status, prior.result, prior.in_doubt) == ("ok", "charged 5", False)
    assert len(later.entries()) == 1
    close(later)


def test_a_tool_runs_once_across_turns_and_restarts(backend: Backend) -> None:
    runs: list[int] = []

    def charge(amount: int) -> str:
        runs.append(amount)
        return f"charged {amount}"

    tools = {"charge": charge}
    first = turn(backend.name, tools, {"charge": "write"}, [block("charge", amount=5)])
    second = turn(backend.name, tools, {"charge": "write"}, [block("charge", amount=5)])
    assert runs == [5]
    assert second.results[0].result == "charged 5"
    assert second.results[0].commit_key == first.results[0].commit_key
    assert [r.replayed for r in second.dispatch_log] == [True]
    (entry,) = inert.recover(backend.name).completed
    assert (entry.tool, entry.arguments, entry.status) == ("charge", {"amount": 5}, "ok")


def test_recorded_errors_are_replayed_not_rerun(backend: Backend) -> None:
    def declined() -> None:
        raise ValueError("card declined")

    turn(backend.name, {"pay": declined}, {"pay": "write"}, [block("pay")])
    report = turn(backend.name, {"pay": lambda: "paid"}, {"pay": "write"}, [block("pay")])
    assert isinstance(report.results[0].error, inert.ReplayedError)
    assert "card declined" in str(report.results[0].error)
    (entry,) = inert.recover(backend.name).completed
    assert entry.status == "error" and entry.error == "ValueError: card declined"


@pytest.mark.parametrize(
    "other", [{"name": "f", "amount": 6}, {"name": "g", "amount": 5}], ids=["other arguments", "other tool"]
)
def test_the_same_key_for_another_call_is_a_conflict(backend: Backend, other: dict[str, Any]) -> None:
    j = backend.open()
    assert j.begin(record("ck1-c", "f", amount=5), "t1") is None
    arguments = {k: v for k, v in other.items() if k != "name"}
    with pytest.raises(inert.IdempotencyConflictError, match="a key names one call"):
        backend.open().begin(record("ck1-c", other["name"], **arguments), "t1")
    (e,) = j.entries()
    assert (e.tool, e.arguments) == ("f", {"amount": 5}), "the conflict changed nothing"
    close(j)


def test_a_write_whose_holder_died_is_in_doubt_and_never_rerun(backend: Backend) -> None:
    holder = backend.open()
    key = inert.commit_key("t1", [block("send", n=1)])
    assert holder.begin(record(key, "send", n=1), "t1") is None
    backend.abandon(holder)  # the process died mid-call
    (doubt,) = inert.recover(backend.name).in_doubt
    assert (doubt.commit_key, doubt.status, doubt.in_doubt, doubt.in_flight) == (key, None, True, False)
    runs: list[int] = []
    report = turn(backend.name, {"send": lambda n: runs.append(n)}, {"send": "write"}, [block("send", n=1)])
    assert runs == [], "a write in doubt may have happened: it is not run again"
    assert isinstance(report.results[0].error, inert.InDoubtError)
    assert "inert recover" in str(report.results[0].error)
    assert [e.commit_key for e in inert.recover(backend.name).in_doubt] == [key], "in doubt until resolved"


def test_an_idempotent_call_whose_holder_died_runs_again_with_the_same_key(backend: Backend) -> None:
    holder = backend.open()
    key = inert.commit_key("t1", [block("put", n=1)])
    assert holder.begin(record(key, "put", "idempotent", n=1), "t1") is None
    backend.abandon(holder)
    keys: list[str] = []

    def put(n: int, idempotency_key: str) -> str:
        keys.append(idempotency_key)
        return "put"

    report = turn(backend.name, {"put": put}, {"put": "idempotent"}, [block("put", n=1)])
    assert keys == [key] and report.results[0].error is None and report.results[0].result == "put"
    rec = inert.recover(backend.name)
    assert rec.in_doubt == [] and [e.status for e in rec.completed] == ["ok"]


def test_a_timed_out_call_is_in_doubt(backend: Backend) -> None:
    j = backend.open()
    r = record("ck1-d", "slow")
    assert j.begin(r, "t1") is None
    r = dataclasses.replace(r, error=inert.ToolTimeoutError("'slow' did not return within 0.1 s"))
    j.complete(r, "timeout")
    prior = backend.open().begin(record("ck1-d", "slow"), "t1")
    assert prior is not None and prior.status == "timeout" and prior.in_doubt
    assert [e.commit_key for e in inert.recover(j).in_doubt] == ["ck1-d"]
    close(j)


def test_entries_are_in_intent_order_and_recover_sorts_them(backend: Backend) -> None:
    j = backend.open()
    for i in range(5):
        r = record(f"ck1-{i}", "f", i=i)
        assert j.begin(r, "t1") is None
        if i % 2 == 0:
            r = dataclasses.replace(r, result=i)
            j.complete(r, "ok")
    assert [e.commit_key for e in j.entries()] == [f"ck1-{i}" for i in range(5)]
    backend.abandon(j)
    rec = inert.recover(backend.name)
    assert [e.commit_key for e in rec.completed] == ["ck1-0", "ck1-2", "ck1-4"]
    assert [e.commit_key for e in rec.in_doubt] == ["ck1-1", "ck1-3"]
    assert rec.in_flight == []


def test_an_outcome_for_a_key_never_begun_is_refused_and_records_nothing(backend: Backend) -> None:
    """Only a call whose begin() claimed its key records an outcome: every back end says
    so with StaleClaimError (the memory journal raised a bare KeyError)."""
    j = backend.open()
    with pytest.raises(inert.StaleClaimError, match="ck1-never"):
        j.complete(dataclasses.replace(record("ck1-never", "send"), result=1), "ok")
    assert j.entries() == []
    assert j.lookup("ck1-never") is None
    close(j)
