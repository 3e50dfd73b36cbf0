"""Hand mutations of the Python gate and scheduler: each one a realistic bug, applied
to the source, the focused tests run, the source restored. Prints caught/total and the
mutants that survive. Not in CI (a few minutes); run after changing gate.py or
runtime/schedule.py:  python .ci/mutate.py  [-k substring]

(`mutmut run` with pyproject's [tool.mutmut] mutates every operator instead; this is the
short list of bugs that matter, with a name each.)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GATE, SCHEDULE = "python/inert/gate.py", "python/inert/runtime/schedule.py"
TESTS = ["tests/runtime/test_schedule_properties.py", "tests/runtime/test_runtime.py", "tests/runtime/test_runtime_properties.py",
         "tests/runtime/test_orchestrator.py", "tests/core/test_properties.py", "tests/runtime/test_rejected_reads.py",
         "tests/runtime/test_two_phase.py", "tests/runtime/test_outcome_order.py", "tests/serving/test_batch_orchestrator.py"]

MUTANTS: list[tuple[str, str, str, str]] = [
    ("writes let go early under read_eager", GATE,
     'permit = self.policy == "eager_unsafe" or (self.policy == "read_eager" and early)',
     'permit = self.policy == "eager_unsafe" or self.policy == "read_eager"'),
    ("defer lets reads go early", GATE,
     'permit = self.policy == "eager_unsafe" or (self.policy == "read_eager" and early)',
     'permit = self.policy == "eager_unsafe" or early'),
    ("a committed call is let go twice", GATE, "                if key not in self._permitted:\n",
     "                if True:\n"),
    ("a retraction keeps its permit", GATE, "                self._permitted.discard(outcome.call.commit_key)\n", ""),
    ("a recurring key is not marked", GATE, "            recurs=call.commit_key in self._retracted,",
     "            recurs=False,"),
    ("malformed blocks go unreported", GATE, "                self.malformed.append(outcome.malformed)\n",
     "                pass\n"),
    ("the tool's timeout is ignored", GATE,
     "timeout=spec.timeout if spec.timeout is not None else self.timeout,", "timeout=self.timeout,"),
    ("an unknown footprint touches nothing", SCHEDULE, "    return keys is None or bool(keys)",
     "    return bool(keys)"),
    ("a cancelled node still bars", SCHEDULE, "        return self.holds and self.state is not State.CANCELLED",
     "        return self.holds"),
    ("an abandoned run still holds", SCHEDULE, "        if self.abandoned:\n            return False\n", ""),
    ("per-tool limits off by one", SCHEDULE, "return limit is None or self._running.get(tool, 0) < limit",
     "return limit is None or self._running.get(tool, 0) <= limit"),
    ("a write does not wait for earlier readers", SCHEDULE,
     "            waits_on.update(r for r in self._readers.pop(key, ()) if r.holds and r is not node)",
     "            self._readers.pop(key, ())"),
    ("finishing frees no slot", SCHEDULE,
     "                ready += self._slots.release(node)",
     "                pass"),
    ("two-phase reads may be abandoned", SCHEDULE,
     "node.abandoned or d.two_phase or d.effect is not EffectClass.READ_ONLY:",
     "node.abandoned or d.effect is not EffectClass.READ_ONLY:"),
]


def main() -> int:
    only = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else ""
    caught, survived = 0, []
    chosen = [m for m in MUTANTS if only in m[0]]
    for name, path, old, new in chosen:
        file = ROOT / path
        source = file.read_text()
        if source.count(old) != 1:
            print(f"STALE  {name}: the line is not in {path} once; update the mutant")
            return 2
        try:
            file.write_text(source.replace(old, new))
            run = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *TESTS],
                                 cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
        except subprocess.TimeoutExpired:
            run = None  # a hang is caught (a test waited for what never came)
        finally:
            file.write_text(source)
        if run is None or run.returncode != 0:
            caught += 1
            print(f"caught   {name}")
        else:
            survived.append(name)
            print(f"SURVIVED {name}")
    print(f"{caught}/{len(chosen)} caught; survivors: {survived}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
