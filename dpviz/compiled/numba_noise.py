"""The exact discrete Laplace sampler over buffered words, compiled (numba).

``dpviz.privacy.noise`` draws keyed discrete Laplace noise from words of a secret stream;
:func:`discrete_laplace_words` reads the same words in the same order and returns the same
numbers, a compiled loop instead of numpy passes. The loader (``dpviz.compiled.kernels``)
registers it with ``dpviz.privacy.noise`` once loaded. Privacy: no change to the noise law;
the guarantee is the sampler's, stated in ``dpviz.privacy.noise``.
"""

import numba as nb
import numpy as np
from numba.cpython.unsafe.numbers import leading_zeros

i64 = nb.int64
_u64 = nb.uint64


@nb.njit(inline="always")
def _below(row, pos, width, high):
    """``noise.uniform_below`` of one item from its words ``row[pos:]``: (value, next
    position), the position -1 when the buffered words run out."""
    if high <= _u64(1):
        return _u64(0), pos
    # 64 − bit_length(high − 1): the processor's count of leading zeros (high ≥ 2).
    shift = _u64(leading_zeros(high - _u64(1)))
    while True:
        if pos >= width:
            return _u64(0), -1
        value = row[pos] >> shift
        pos += 1
        if value < high:
            return value, pos


@nb.njit(inline="always")
def _bernoulli_exp(row, pos, width, num, den):
    """``noise._bernoulli_exp`` of one item: (Bernoulli(exp(-num/den)), next position)."""
    if num == _u64(0):
        return True, pos
    k = _u64(1)
    while True:
        a, pos = _below(row, pos, width, den * k)
        if pos < 0:
            return False, -1
        if a < num:
            k += _u64(1)
        else:
            return (k % _u64(2)) == _u64(1), pos


@nb.njit((_u64[:, ::1], _u64, _u64, i64[::1], nb.boolean[::1]), nogil=True, cache=True)
def discrete_laplace_words(words, s, t, out, short):
    """``noise.sample_discrete_laplace`` item by item: item e reads its own words
    ``words[e]`` (both words of each cipher block, block after block) in the order the
    vectorised sampler draws them (a uniform below t, its Bernoulli, the geometric
    part, the sign; again while rejected), so the two give the same noise from the
    same words. ``short[e]``: item e needs more words than
    the buffer holds (its ``out`` is then not set)."""
    width = words.shape[1]
    one = _u64(1)
    for e in range(words.shape[0]):
        row = words[e]
        pos = 0
        result = np.int64(0)
        while True:
            u, pos = _below(row, pos, width, t)
            if pos < 0:
                break
            keep, pos = _bernoulli_exp(row, pos, width, u, t)
            if pos < 0:
                break
            v = _u64(0)
            if keep:
                while True:
                    more, pos = _bernoulli_exp(row, pos, width, one, one)
                    if pos < 0 or not more:
                        break
                    v += one
                if pos < 0:
                    break
            y = (u + t * v) // s
            if pos >= width:
                pos = -1
                break
            negative = (row[pos] >> _u64(63)) == one
            pos += 1
            if keep and not (negative and y == _u64(0)):
                result = -np.int64(y) if negative else np.int64(y)
                break
        if pos < 0:
            short[e] = True
        else:
            out[e] = result
