"""What the API takes in: tokens, and runs of integers (token ids, counts,
sequence ids) from lists or from arrays, as a serving engine holds them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, SupportsIndex, TypeAlias, TypeVar

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["Ids", "IntArray", "Token", "TokenRows", "Tokens", "reiterable"]


class IntArray(Protocol):
    """An array of integers: a numpy array (read in one copy through its buffer;
    numpy's stubs declare that buffer only from Python 3.12), or anything else
    with ``__array__`` that iterates as ints (a CPU torch tensor, read element by
    element: pass ``tensor.numpy()`` for one copy)."""

    def __array__(self) -> Any: ...


Token: TypeAlias = str | bytes | int | SupportsIndex
"""A piece of text, its UTF-8 bytes, or a token id (numpy integer scalars included)."""
Tokens: TypeAlias = "Sequence[Token] | Buffer | IntArray"
"""A step's tokens: a list of tokens, or a 1-D integer array of ids."""
Ids: TypeAlias = "Buffer | IntArray | Sequence[int | SupportsIndex]"
"""Integers: any 1-D integer buffer (numpy int8-int64/uint8-uint64, ``array.array``,
``memoryview``), read in one copy, or a sequence of ints."""
TokenRows: TypeAlias = "Buffer | IntArray | Sequence[Sequence[int | SupportsIndex]]"
"""A batch's drafts: a 2-D (sequences, tokens) integer array, or one list of ids per sequence."""

_T = TypeVar("_T")


def reiterable(values: _T) -> _T:
    """``values``, as a list when they are a one-shot iterator (a generator): the core takes
    any iterable and uses it up, so a second reader of it (the trace, the streamed output of
    the same sequences) would find it empty and record a draft of nothing."""
    if isinstance(values, Iterator):
        return list(values)  # type: ignore[return-value]  # the same items, readable twice
    return values
