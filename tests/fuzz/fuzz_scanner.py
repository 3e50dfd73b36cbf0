"""Fuzz target for the scanner through the public API, over every format:
arbitrary bytes, arbitrary chunkings, arbitrary verify decisions.

Checks, on every input: nothing raises (model output is data); each block's
events follow opened -> closed|malformed -> accepted|retracted and nothing
accepted is ever retracted; the accepted calls of the incremental run equal a
one-shot parse of the accepted text (two code paths, one answer).

    pip install atheris
    python tests/fuzz/fuzz_scanner.py -dict=tests/fuzz/delimiters.dict -max_total_time=60   # what CI runs
    python tests/fuzz/fuzz_scanner.py -dict=tests/fuzz/delimiters.dict -max_total_time=3600 -workers=2 -jobs=2

Atheris instruments the Python harness; the Rust core is exercised but not
coverage-instrumented (that needs a sanitizer-coverage build of the extension).
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    import inert

FORMATS = inert.formats()
# Seeds the fuzzer's bytes with each format's delimiters so it reaches block bodies.
PREFIXES = [b"", b"<tool_call>", b"[TOOL_CALLS]", b"<|python_tag|>{", b"[", b"<|tool_call|>[", b"<tool_calls>",
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>".encode(), b"<|tool_calls_section_begin|><|tool_call_begin|>",
            "<｜DSML｜function_calls><｜DSML｜invoke name=\"".encode(), b"<minimax:tool_call><invoke name=\"",
            b"to=functions.", b"<|action_start|><|plugin|>"]
MAX_BLOCK = 512


@atheris.instrument_func
def committed(events: list[inert.BlockEvent]) -> list[tuple[object, ...]]:
    state: dict[int, str] = {}
    current: dict[int, list[tuple[object, ...]]] = {}
    out: list[tuple[object, ...]] = []
    allowed = {"opened": (None,), "closed": ("opened", "closed"), "malformed": ("opened",),
               "accepted": ("closed", "malformed"), "retracted": ("opened", "closed", "malformed")}
    for e in events:
        before = state.get(e.block)
        if before not in allowed[e.kind]:
            raise AssertionError(f"{e.kind} after {before} for block {e.block}: {e!r}")
        if e.kind == "closed":
            current.setdefault(e.block, []).append((e.name, e.arguments))
        elif e.kind == "malformed":
            current[e.block] = [("malformed",)]
        elif e.kind == "accepted":
            out += current.pop(e.block, [])
        elif e.kind == "retracted":
            current.pop(e.block, None)
        state[e.block] = {"retracted": "opened", "accepted": "accepted"}.get(e.kind, e.kind)
        if e.kind == "accepted":
            state[e.block] = "done"  # a block that is done takes no more events
    return out


@atheris.instrument_func
def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    fmt = FORMATS[fdp.ConsumeIntInRange(0, len(FORMATS) - 1)]
    text = PREFIXES[fdp.ConsumeIntInRange(0, len(PREFIXES) - 1)] + fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 2048))
    stream = inert.TokenStream(fmt, "fuzz", max_block_bytes=MAX_BLOCK)
    events: list[inert.BlockEvent] = []
    accepted = b""
    pos = 0
    while pos < len(text) and fdp.remaining_bytes() > 0:
        window = [text[pos:pos + fdp.ConsumeIntInRange(1, 16)]]
        while len(window) < fdp.ConsumeIntInRange(1, 8) and pos + sum(map(len, window)) < len(text):
            start = pos + sum(map(len, window))
            window.append(text[start:start + fdp.ConsumeIntInRange(1, 16)])
        events += stream.draft(window)
        n = fdp.ConsumeIntInRange(0, len(window))
        events += stream.verify(n)
        accepted += b"".join(window[:n])
        pos += sum(map(len, window[:n])) or 1
    events += stream.finish()
    assert stream.accepted_text() == accepted
    incremental = committed(events)
    one_shot = [("malformed",) if e.kind == "malformed" else (e.name, e.arguments)
                for e in inert._core.parse(accepted, fmt, max_block_bytes=MAX_BLOCK)]
    if incremental != one_shot:
        raise AssertionError(f"{fmt}: incremental {incremental} != one-shot {one_shot} for {accepted!r}")


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
