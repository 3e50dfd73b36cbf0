"""Long blocks, side by side in one run: a step that drafts the closer of a long block
(and sometimes a short call after it in the same token) which the verifier rejects, at a
64 KB and a 1 MB body (flat when a step costs its tokens, not the block); and one piece
holding 10k and 80k small blocks read in one shot (linear when per block is flat; the
instructions per block are (callgrind: 15.3k at 10k, 15.6k at 40k), and what wall time adds at
80k is memory: 80k outcome objects held at once, as before the unread bodies); and one XML
call with 2k and 32k parameters, with and without a schema (flat per parameter).
Run: pytest benches/bench_long_blocks.py --benchmark-only
"""

from __future__ import annotations

import pytest

import inert
from conftest import record

STEPS = 50
CLOSER = '"}}</tool_call>'
SHORT = '<tool_call>{"name": "g", "arguments": {}}</tool_call>'


@pytest.mark.parametrize("tail", ["closer", "closer+short"])
@pytest.mark.parametrize("kb", [64, 1024])
def test_rejected_closer_step(benchmark: object, kb: int, tail: str) -> None:
    s = inert.TokenStream("hermes", "t", max_block_bytes=4 << 20)
    s.draft(['<tool_call>{"name": "save", "arguments": {"text": "' + "x" * (kb * 1024)])
    s.verify(1)
    window = ["yy", CLOSER + (SHORT if tail == "closer+short" else "")]

    def run() -> None:
        for _ in range(STEPS):
            s.draft(window)
            s.verify(1)

    benchmark.group = "long block, closer drafted and rejected"  # type: ignore[attr-defined]
    benchmark.pedantic(run, rounds=20, iterations=1, warmup_rounds=1)  # type: ignore[attr-defined]
    record(benchmark, f"long_block:{tail}@{kb}k", per=STEPS)


@pytest.mark.parametrize("blocks", [10_000, 80_000])
def test_many_blocks_in_one_piece(benchmark: object, blocks: int) -> None:
    text = (SHORT + "\n") * blocks
    benchmark.group = "many blocks in one piece (inert.parse)"  # type: ignore[attr-defined]
    benchmark.pedantic(lambda: inert.parse(text, "hermes"), rounds=3, iterations=1)  # type: ignore[attr-defined]
    record(benchmark, f"one_piece_blocks@{blocks}", per=blocks)


@pytest.mark.parametrize("schema", [False, True], ids=["plain", "schema"])
@pytest.mark.parametrize("params", [2_000, 32_000])
def test_xml_call_with_many_parameters(benchmark: object, params: int, schema: bool) -> None:
    """Flat per parameter: the duplicate check and, past a schema's first 128 parameters,
    whether one was given were walks over the others (32k: 0.78 s plain, 2.6 s with a schema)."""
    body = "".join(f"<parameter=p{i}>\nv\n</parameter>\n" for i in range(params))
    text = f"<tool_call>\n<function=f>\n{body}</function>\n</tool_call>"
    schemas = {"f": {"properties": {f"p{i}": {} for i in range(params)}}} if schema else None
    benchmark.group = "one XML call with many parameters (inert.parse, qwen3_coder)"  # type: ignore[attr-defined]
    benchmark.pedantic(  # type: ignore[attr-defined]
        lambda: inert.parse(text, "qwen3_coder", schemas=schemas, max_block_bytes=1 << 26), rounds=3, iterations=1
    )
    record(benchmark, f"xml_params:{'schema' if schema else 'plain'}@{params}", per=params)
