"""reconcile() on hand-written dispatch logs, as another stack would produce them."""

from __future__ import annotations

import inert


def rec(key: str, name: str, effect: str, started: float, finished: float, **fp: object) -> dict[str, object]:
    return {
        "commit_key": key,
        "name": name,
        "arguments": {"n": 1},
        "effect": effect,
        "started": started,
        "finished": finished,
        "span": (0, 1),
        "footprint": {"reads": fp.get("reads"), "writes": fp.get("writes")},
    }


def acc(key: str, name: str) -> dict[str, object]:
    return {"commit_key": key, "name": name, "arguments": {"n": 1}, "span": (0, 1)}


def kinds(report: inert.Report) -> list[str]:
    return [v.kind for v in report.violations]


def test_consistent_log() -> None:
    log = [rec("k1", "w", "write", 0, 1, reads=["x"], writes=["x"]), rec("k2", "r", "read_only", 1, 2, reads=["x"])]
    report = inert.reconcile(log, [acc("k1", "w"), acc("k2", "r")])
    assert report.consistent and [r.name for r in report.results] == ["w", "r"]


def test_orphans_missed_and_discarded() -> None:
    log = [rec("kd", "w", "write", 0, 1), rec("kr", "r", "read_only", 0, 1)]
    report = inert.reconcile(log, [{**acc("k9", "w"), "arguments": {"n": 2}}])
    assert sorted(kinds(report)) == ["missed", "orphan"]
    assert [d.commit_key for d in report.discarded] == ["kr"]
    orphan = next(v for v in report.violations if v.kind == "orphan")
    assert "kd" in orphan.message and "'w'" in orphan.message


def test_same_call_under_two_keys_is_a_key_divergence() -> None:
    report = inert.reconcile([rec("draft-key", "w", "write", 0, 1)], [acc("accepted-key", "w")])
    (v,) = report.violations
    assert (v.kind, v.commit_key, v.other_key) == ("key_divergence", "accepted-key", "draft-key")
    assert "keyed the same call apart" in v.message


def test_stale_read_uses_start_and_finish_times() -> None:
    log = [
        rec("k1", "del", "idempotent", 0.0, 0.08, reads=["q2"], writes=["q2"]),
        rec("k2", "read", "read_only", 0.01, 0.011, reads=["q2"]),
    ]
    report = inert.reconcile(log, [acc("k1", "del"), acc("k2", "read")])
    (v,) = report.violations
    assert (v.kind, v.tool, v.commit_key, v.other_key) == ("stale_read", "read", "k2", "k1")


def test_disjoint_footprints_may_overlap_in_time() -> None:
    log = [
        rec("k1", "w", "write", 0, 1, reads=["a"], writes=["a"]),
        rec("k2", "w", "write", 0.5, 1, reads=["b"], writes=["b"]),
    ]
    assert inert.reconcile(log, [acc("k1", "w"), acc("k2", "w")]).consistent


def test_unknown_footprints_conflict() -> None:
    log = [rec("k1", "w", "write", 0, 1), rec("k2", "w", "write", 0.5, 1)]
    assert kinds(inert.reconcile(log, [acc("k1", "w"), acc("k2", "w")])) == ["stale_read"]


def test_duplicates_and_divergent_arguments() -> None:
    log = [
        rec("k1", "w", "write", 0, 1, writes=["a"], reads=["a"]),
        rec("k1", "w", "write", 2, 3, writes=["a"], reads=["a"]),
    ]
    report = inert.reconcile(log, [acc("k1", "w")])
    assert kinds(report) == ["duplicate"]
    changed = {**acc("k1", "w"), "arguments": {"n": 2}}
    assert kinds(inert.reconcile(log[:1], [changed])) == ["key_divergence"]


def test_a_key_reused_by_every_call_is_reconciled_in_linear_work() -> None:
    """A stack that keys every call on its turn alone puts n dispatches under one key;
    each accepted call must not rescan them (it did: n**2 reads, seconds at a few thousand)."""
    reads = 0

    class Counted(inert.DispatchRecord):
        @property
        def executed_effect(self) -> bool:
            nonlocal reads
            reads += 1
            return bool(super().executed_effect)

    n = 300
    log = [
        Counted("k", "w", {"i": i}, inert.EffectClass.WRITE, inert.Footprint(None, None), (i, i + 1), False, i, i + 0.5)
        for i in range(n)
    ]
    report = inert.reconcile(log, [inert.AcceptedCall("k", "w", {"i": n - 1}, (i, i + 1)) for i in range(n)])
    assert kinds(report).count("duplicate") == n
    assert reads <= 3 * n, f"{reads} reads of the dispatch log for {n} calls"
