"""A two-phase tool that writes a file: ``prepare`` writes the content to a
temporary file beside the target (the slow part, invisible), ``commit`` renames
it into place (atomic on POSIX), ``abort`` deletes it.

    python examples/two_phase_files.py
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import inert


@dataclass(frozen=True)
class StagedFile:
    temporary: str
    target: str
    size: int


class WriteFile:
    """Writes ``content`` to ``path`` under ``root``, in two phases."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _target(self, path: str) -> Path:
        target = (self.root / path).resolve()
        if self.root.resolve() not in target.parents:
            raise ValueError(f"{path!r} is outside {self.root}")
        return target

    def prepare(self, path: str, content: str) -> StagedFile:
        target = self._target(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".staged", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        return StagedFile(temporary, str(target), len(content.encode()))

    def commit(self, staged: StagedFile, *, idempotency_key: str) -> str:
        os.replace(staged.temporary, staged.target)
        return f"wrote {staged.size} bytes to {staged.target}"

    def abort(self, staged: StagedFile) -> None:
        Path(staged.temporary).unlink(missing_ok=True)


def main() -> int:
    call = '<tool_call>{"name": "write_file", "arguments": {"path": "%s", "content": "hello"}}</tool_call>'
    with tempfile.TemporaryDirectory() as root:
        orch = inert.Orchestrator({"write_file": "write"}, {"write_file": WriteFile(root)}, turn_key="demo-files")
        orch.draft([call % "notes/draft.txt"])  # staged at once, invisible
        orch.verify(0, call % "notes/final.txt")  # rejected: the staged draft is deleted
        orch.finish()
        files = sorted(str(p.relative_to(root)) for p in Path(root).rglob("*") if p.is_file())
        print(files)
        return 0 if files == ["notes/final.txt"] else 1


if __name__ == "__main__":
    sys.exit(main())
