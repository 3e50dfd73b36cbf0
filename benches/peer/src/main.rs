//! Feeds the `tool-parser` crate's Qwen/Hermes streaming parser one chunk per
//! sequence and step, the text a step accepts (the peer has no rollback, so it
//! only ever sees accepted text), and prints the mean microseconds per whole
//! step (all sequences) over the best round, as JSON on one line.
//!
//! Input (argv[1]): JSON `{"rounds": R, "steps": [[chunk of seq 0, ...], ...]}`.
//! Each round starts fresh parsers and runs every step once.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;
use tool_parser::{QwenParser, ToolParser};

/// The parser's futures never wait on anything: one poll completes them.
fn ready<T>(f: impl Future<Output = T>) -> T {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(f).as_mut().poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the parser's future waited"),
    }
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: inert-peer-bench STEPS.json");
    let input: serde_json::Value = serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json");
    let rounds = input["rounds"].as_u64().unwrap_or(5) as usize;
    let steps: Vec<Vec<String>> = serde_json::from_value(input["steps"].clone()).expect("steps");
    let rows = steps[0].len();
    let tool: openai_protocol::common::Tool = serde_json::from_value(serde_json::json!({
        "type": "function",
        "function": {"name": "search", "description": "search", "parameters": {
            "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}
    }))
    .expect("tool");
    let tools = vec![tool];
    let mut best = f64::INFINITY;
    let mut calls = 0usize;
    for _ in 0..rounds {
        let mut parsers: Vec<QwenParser> = (0..rows).map(|_| QwenParser::new()).collect();
        calls = 0;
        let t = Instant::now();
        for step in &steps {
            for (p, chunk) in parsers.iter_mut().zip(step) {
                let r = ready(p.parse_incremental(chunk, &tools)).expect("parse");
                calls += r.calls.iter().filter(|c| c.name.is_some()).count();
            }
        }
        best = best.min(t.elapsed().as_secs_f64() / steps.len() as f64);
    }
    println!(
        "{{\"us_per_step\": {:.3}, \"rows\": {rows}, \"steps\": {}, \"calls_named\": {calls}}}",
        best * 1e6,
        steps.len()
    );
}
