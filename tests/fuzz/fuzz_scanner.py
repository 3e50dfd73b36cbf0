"""Fuzz target for the scanner through the public API, over every format:
arbitrary bytes, arbitrary chunkings, arbitrary verify decisions, turns that
start inside reasoning or not, with or without schemas.

Checks, on every input: nothing raises (model output is data); each call is
closed, then committed or retracted exactly once, and none is left open at the
end of the turn; what the incremental run commits (calls, malformed blocks,
reasoning closers that closed nothing) equals a one-shot parse of the accepted
text (two code paths, one answer).

    pip install atheris
    python tests/fuzz/fuzz_scanner.py -dict=tests/fuzz/delimiters.dict -max_total_time=60
    python tests/fuzz/fuzz_scanner.py -dict=tests/fuzz/delimiters.dict -max_total_time=3600 -workers=2 -jobs=2

Atheris instruments the Python harness. Over a plain build of the extension the
Rust core runs but libFuzzer sees none of its branches; build it with sanitizer
coverage (and debug assertions) into a virtualenv of its own for that, as CI does:

    bash tests/fuzz/build_native.sh .venv-fuzz
    .venv-fuzz/bin/python tests/fuzz/fuzz_scanner.py -dict=tests/fuzz/delimiters.dict -max_total_time=60
"""

from __future__ import annotations

import sys

# atheris ships no types (and the test extra does not install it): it reads as Any
import atheris  # type: ignore[import-untyped, import-not-found, unused-ignore]
import native_coverage  # noqa: F401  # before inert: see its docstring

with atheris.instrument_imports():
    import inert

FORMATS = inert.formats()
# Seeds the fuzzer's bytes with each format's delimiters so it reaches block bodies and reasoning.
PREFIXES = [
    b"",
    b"<tool_call>",
    b"[TOOL_CALLS]",
    b"<|python_tag|>{",
    b"[",
    b"<|tool_call|>[",
    b"<tool_calls>",
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>".encode(),
    b"<|tool_calls_section_begin|><|tool_call_begin|>",
    '<｜DSML｜function_calls><｜DSML｜invoke name="'.encode(),
    b'<minimax:tool_call><invoke name="',
    b"to=functions.",
    b"<|action_start|><|plugin|>",
    b"<|action_start|> <|plugin|>",
    b"functools[",
    b"<function_calls>",
    b"<think>",
    b"</think>",
    b"[THINK]",
    b"<|channel|>analysis<|message|>",
    b"<tool_call>\n<function=f>\n<parameter=a>\n",
]
# Half the runs know the tool "f": raw-text XML values are then read by the schema rules.
SCHEMAS = {
    "f": {"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer"}, "o": {"type": "object"}}}
}
MAX_BLOCK = 512


@atheris.instrument_func  # type: ignore[untyped-decorator]  # atheris is untyped
def committed(outcomes: list[inert.Outcome]) -> list[tuple[object, ...]]:
    """What the turn committed, checking each call's life on the way."""
    live: set[int] = set()
    out: list[tuple[object, ...]] = []
    for o in outcomes:
        if isinstance(o, inert.BlockMalformed):
            out.append(("malformed", o.malformed.kind))
            continue
        key = id(o.call)
        if isinstance(o, inert.CallClosed):
            if key in live:
                raise AssertionError(f"closed twice: {o!r}")
            live.add(key)
            continue
        if key not in live:
            raise AssertionError(f"{o.kind} of a call that is not closed: {o!r}")
        live.remove(key)
        if isinstance(o, inert.CallCommitted):
            out.append((o.call.name, o.call.arguments))
    if live:
        raise AssertionError(f"{len(live)} call(s) neither committed nor retracted at the end of the turn")
    return out


@atheris.instrument_func  # type: ignore[untyped-decorator]  # atheris is untyped
def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    fmt = FORMATS[fdp.ConsumeIntInRange(0, len(FORMATS) - 1)]
    text = PREFIXES[fdp.ConsumeIntInRange(0, len(PREFIXES) - 1)] + fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 2048))
    kw = {
        "schemas": SCHEMAS if fdp.ConsumeBool() else None,
        "in_reasoning": fmt != "granite" and fdp.ConsumeBool(),
    }  # granite has no reasoning delimiters
    stream = inert.TokenStream(fmt, "fuzz", max_block_bytes=MAX_BLOCK, **kw)
    outcomes: list[inert.Outcome] = []
    accepted = b""
    pos = 0
    while pos < len(text) and fdp.remaining_bytes() > 0:
        window = [text[pos : pos + fdp.ConsumeIntInRange(1, 16)]]
        while len(window) < fdp.ConsumeIntInRange(1, 8) and pos + sum(map(len, window)) < len(text):
            start = pos + sum(map(len, window))
            window.append(text[start : start + fdp.ConsumeIntInRange(1, 16)])
        outcomes += stream.draft(window)
        n = fdp.ConsumeIntInRange(0, len(window))
        outcomes += stream.verify(n)
        accepted += b"".join(window[:n])
        pos += sum(map(len, window[:n])) or 1
    outcomes += stream.finish()
    assert stream.accepted_text() == accepted
    incremental = committed(outcomes)
    found = inert.parse(accepted, fmt, max_block_bytes=MAX_BLOCK, **kw)
    one_shot = [
        ("malformed", p.kind) if isinstance(p, inert.Malformed) else (p.name, p.arguments)
        for p in found
        if not isinstance(p, inert.ReasoningUnopened)
    ]
    if incremental != one_shot:
        raise AssertionError(f"{fmt}: incremental {incremental} != one-shot {one_shot} for {accepted!r}")
    if len(stream.notices()) != sum(isinstance(p, inert.ReasoningUnopened) for p in found):
        raise AssertionError(f"{fmt}: notices {stream.notices()} differ from the one-shot parse of {accepted!r}")


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input, internal_libfuzzer=True)
    atheris.Fuzz()
