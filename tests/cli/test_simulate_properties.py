"""`inert simulate` over random turns (seeds, acceptance, draft depth, drafters, two-phase
latencies): no safe policy corrupts the world, every prepare ends in exactly one commit or
one abort, commits follow acceptance, and a more eager policy finishes no later than a more
patient one unless inert's scheduler held one of its calls behind a call that call does not
conflict with (see ``test_a_prepare_on_a_rejected_draft_holds_the_corrected_call``)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from inert.report import Report
from inert.simulate import AGENTS, MODELS, Agent, Latency, ModelProfile, PlayedTurn, Workload, play_turn

SAFE = ("end_of_turn", "defer", "read_eager")


def held_by_a_call_it_does_not_conflict_with(report: Report) -> list[str]:
    """Accepted calls that started the instant another call finished, where that call was
    rejected or does not conflict with them: the scheduler held them for nothing the accepted
    stream needs (a rejected call still running; a rejected call of unknown footprint, a
    ghost that holds every later call until the calls before it finish)."""
    log = report.dispatch_log
    out = []
    for call in log:
        if call.discarded or call.started is None:
            continue
        for other in log:
            if other is call or other.finished != call.started:
                continue
            if other.discarded or not other.footprint.conflicts(call.footprint):
                out.append(f"{call.name}{call.arguments} held by {other.name}{other.arguments}")
    return out


def assert_no_later_than(eager: PlayedTurn, patient: PlayedTurn, what: str) -> None:
    if eager.outcome.latency <= patient.outcome.latency + 1e-9:
        return
    assert held_by_a_call_it_does_not_conflict_with(eager.report), (
        f"{what}: {eager.outcome.latency:.4f} s against {patient.outcome.latency:.4f} s, and no call of the "
        "slower turn was held by a call it does not conflict with"
    )


def assert_phases(workload: Workload, played: PlayedTurn, seed: int) -> None:
    """Every two-phase call ended in one commit (accepted, after its acceptance) or one abort (rejected)."""
    accepted = {c.commit_key for c in played.report.accepted}
    committed: list[str] = []
    for record in played.report.dispatch_log:
        tool = workload.agent.tools.get(record.name)
        if tool is None or not tool.two_phase:
            continue
        assert record.phase in ("commit", "abort"), f"{record.name} ended in {record.phase!r}: a leaked prepare"
        if record.phase == "abort":
            assert record.commit_key not in accepted and record.discarded, "an accepted call was aborted"
            continue
        assert record.commit_key in accepted and not record.discarded, "a rejected call committed"
        committed.append(record.commit_key)
        assert record.finished is not None
        commit_started = record.finished - tool.duration(seed, record.arguments)
        assert commit_started >= played.accepted_at[record.commit_key] - 1e-9, "committed before its acceptance"
    assert len(committed) == len(set(committed)), "a call committed twice"
    two_phase = [c for c in played.report.accepted if (t := workload.agent.tools.get(c.name)) and t.two_phase]
    assert len(committed) == len(two_phase), "an accepted two-phase call never committed"


def _with_latencies(agent: Agent, prepare: Latency, commit: Latency) -> Agent:
    tools = {n: replace(t, prepare=prepare, latency=commit) if t.two_phase else t for n, t in agent.tools.items()}
    return replace(agent, tools=tools)


latencies = st.builds(lambda median, tail: Latency(median, median * tail), st.floats(0.0005, 0.5), st.floats(1.0, 5.0))

models = st.builds(
    lambda alpha, k, verify, per_token, accuracy, whole: ModelProfile(
        "random",
        alpha=alpha,
        k=k,
        verify_s=verify,
        draft_s=0.0004,
        verify_per_token_s=per_token,
        call_accuracy=accuracy,
        whole_calls=whole,
    ),
    st.floats(0.3, 1.0),
    st.sampled_from([1, 2, 4, 5, 8, 16, 24, 32, 64]),
    st.floats(0.001, 0.03),
    st.sampled_from([0.0, 0.00002, 0.0007]),
    st.none() | st.floats(0.3, 1.0),
    st.booleans(),
)


@given(
    model=models,
    agent=st.sampled_from(["coding-staged", "payments"]),
    prepare=latencies,
    commit=latencies,
    seed=st.integers(0, 2**31),
)
def test_random_two_phase_turns_never_corrupt_and_every_prepare_ends_once(
    model: ModelProfile, agent: str, prepare: Latency, commit: Latency, seed: int
) -> None:
    workload = Workload(model, _with_latencies(AGENTS[agent], prepare, commit))
    played = {policy: play_turn(workload, policy, seed) for policy in SAFE}
    for policy, turn in played.items():
        o = turn.outcome
        assert (o.orphans, o.stale_reads, o.diverged) == (0, 0, False), policy
        assert turn.report.violations == [], (policy, [v.message for v in turn.report.violations])
        assert_phases(workload, turn, seed)
    assert_no_later_than(played["defer"], played["end_of_turn"], "defer finished after end_of_turn")
    assert_no_later_than(played["read_eager"], played["defer"], "read_eager finished after defer")


@given(model=models, agent=st.sampled_from(["research", "coding", "incident"]), seed=st.integers(0, 2**31))
def test_random_turns_without_two_phase_tools_keep_the_same_order(model: ModelProfile, agent: str, seed: int) -> None:
    workload = Workload(model, AGENTS[agent])
    played = {policy: play_turn(workload, policy, seed) for policy in SAFE}
    for policy, turn in played.items():
        assert turn.report.violations == [], (policy, [v.message for v in turn.report.violations])
        assert not turn.outcome.diverged, policy
    assert_no_later_than(played["defer"], played["end_of_turn"], "defer finished after end_of_turn")
    assert_no_later_than(played["read_eager"], played["defer"], "read_eager finished after defer")


def test_a_prepare_on_a_rejected_draft_holds_the_corrected_call() -> None:
    """Why read_eager can lose to defer (README, "Simulation"): the draft slipped in a payment's
    ``source`` (not its footprint, the invoice), the slipped payment prepared on the draft, the
    verifier rejected it, and the corrected payment waited for that prepare to return before it
    prepared itself. Under defer the slipped payment never ran. inert's scheduler holds a later
    conflicting call behind every running call, rejected or not; if that changes, this test, the
    README's figures and docs/two_phase.png change with it."""
    workload = Workload(MODELS["8b-h100"], AGENTS["payments"])
    defer, eager = (play_turn(workload, p, 10) for p in ("defer", "read_eager"))
    assert eager.outcome.latency > defer.outcome.latency + 0.5
    slipped = next(r for r in eager.report.dispatch_log if r.discarded and r.name == "pay_invoice")
    assert slipped.phase == "abort" and slipped.arguments["invoice"] == "INV-1042"
    corrected = next(
        r
        for r in eager.report.dispatch_log
        if not r.discarded and r.name == "pay_invoice" and r.arguments["invoice"] == "INV-1042"
    )
    assert corrected.started == slipped.finished, "the corrected payment started when the slipped one returned"
    assert corrected.started is not None and corrected.started > eager.accepted_at[corrected.commit_key] + 0.5
    assert held_by_a_call_it_does_not_conflict_with(eager.report)
    assert not held_by_a_call_it_does_not_conflict_with(defer.report)
