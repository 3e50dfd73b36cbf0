"""draft_tree + verify_path on hostile trees at several sizes: flat per node when a tree costs
in proportion to its nodes.

- chain: one chain of nodes full of calls (each node's block table once was a copy of its
  parent's, so it cost the square of its length in time and memory);
- calls: a chain whose every node is a whole call, against a linear draft of the same tokens
  (each announced call was once compared with every call announced before it);
- comb: a path of value bytes inside an open block, each node with a leaf that closes it (each
  leaf's key once absorbed the whole shared path again).

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


def calls(n: int) -> tuple[float, float]:
    """Seconds for a chain of n whole calls drafted as a tree, and drafted linearly."""
    tokens = [f'<tool_call>{{"name": "f", "arguments": {{"a": {i}}}}}</tool_call>' for i in range(n)]
    t = time.perf_counter()
    inert.TokenStream("hermes", "t").draft_tree(tokens, list(range(-1, n - 1)))
    tree = time.perf_counter() - t
    t = time.perf_counter()
    inert.TokenStream("hermes", "t").draft(tokens)
    return tree, time.perf_counter() - t


def comb(n: int) -> float:
    """Seconds for a comb of n nodes: n/2 value bytes on a path, each with a closing leaf."""
    stream = inert.TokenStream("hermes", "t")
    stream.draft(['<tool_call>{"name": "f", "arguments": {"t": "'])
    stream.verify(1)
    tokens, parents = [], []
    for d in range(n // 2):
        tokens += ["x", '"}}</tool_call>']
        parents += [2 * d - 2 if d else -1, 2 * d]
    t = time.perf_counter()
    stream.draft_tree(tokens, parents)
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
    for n in (int(s) * 8 for s in a.sizes.split(",")):
        tree, linear = calls(n)
        print(f"calls of {n:6d} nodes: {tree:8.3f} s  {tree / n * 1e6:8.1f} us/node  tree/linear {tree / linear:5.1f}")
    for n in (int(s) * 4 for s in a.sizes.split(",")):
        seconds = comb(n)
        print(f"comb of  {n:6d} nodes: {seconds:8.3f} s  {seconds / n * 1e6:8.1f} us/node")


if __name__ == "__main__":
    main()
