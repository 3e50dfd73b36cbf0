"""draft_tree + verify_path on one chain of nodes full of calls, at several sizes: flat per node
when a tree costs in proportion to its nodes (each node's block table once was a copy of its
parent's, so a chain with calls cost the square of its length in time and memory).

    python benches/bench_trees.py [--sizes 500,2000,8000]

Prints seconds per tree, microseconds per node, and the growth of the process's resident memory.
"""

from __future__ import annotations

import argparse
import time

import inert

PIECES = ["<tool_call>", '{"name": "get", "arguments": {"k": 1}}', "</tool_call>", " ", "ok"]
CALL = [0, 1, 2, 3, 4]  # a whole call, then prose: every node that ends a block keeps one more


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def chain(n: int) -> float:
    vocab = inert.Vocabulary(PIECES)
    stream = inert.TokenStream("hermes", "t", vocab=vocab)
    tokens = [CALL[i % len(CALL)] for i in range(n)]
    parents = list(range(-1, n - 1))
    t = time.perf_counter()
    stream.draft_tree(tokens, parents)
    stream.verify_path(list(range(n)))
    return time.perf_counter() - t


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="500,2000,8000")
    a = p.parse_args()
    for n in (int(s) for s in a.sizes.split(",")):
        before = rss()
        seconds = chain(n)
        print(
            f"chain of {n:6d} nodes ({n // len(CALL)} calls): {seconds:8.3f} s  {seconds / n * 1e6:8.1f} us/node  "
            f"resident memory +{(rss() - before) / 2**20:7.1f} MB"
        )


if __name__ == "__main__":
    main()
