"""The exact discrete Laplace sampler of a sequential noise stream, compiled (numba).

``dpviz.privacy.noise.sample_discrete_laplace`` draws a stream's words in rejection
rounds over the items still undecided: each round of a uniform below a bound, of a
Bernoulli(exp(−γ)) and of the geometric part reads one word per active item, in item
order. :func:`stream_discrete_laplace` replays those rounds item list by item list on a
buffer of the stream's next words, so it reads the same words in the same order and
gives the same numbers (the same law: Canonne, Kamath & Steinke 2020, exact), without a
numpy call per round (the split release's 320 draws took ~11 ms in rounds of numpy,
tens of microseconds here). It reports how many words it read, so the stream continues
exactly where the vectorised sampler would have left it.

Imported only by ``dpviz.compiled.kernels`` (which registers it with
``dpviz.privacy.noise``: privacy imports nothing from models).
"""

import numba as nb
import numpy as np

_u64, _i64 = nb.uint64, nb.int64


@nb.njit(inline="always")
def _shift(high):
    """64 − bit length of ``high − 1``: the top bits a uniform below ``high`` reads."""
    x = high - np.uint64(1)
    n = 0
    for width in (32, 16, 8, 4, 2, 1):  # binary search: 6 steps, not up to 64
        if x >> np.uint64(width):
            x >>= np.uint64(width)
            n += width
    return np.uint64(64 - (n + (1 if x else 0)))


@nb.njit(cache=True, nogil=True)
def _below(words, pos, high, out):
    """``noise.uniform_below`` over the items of ``high`` from ``words[pos:]``: writes
    ``out``, returns the next position (−1 when the buffer runs out)."""
    m = len(high)
    active = np.empty(m, dtype=np.int64)
    n_active = 0
    for i in range(m):
        out[i] = 0
        if high[i] > np.uint64(1):
            active[n_active] = i
            n_active += 1
    while n_active:
        if pos + n_active > len(words):
            return -1
        rest = 0
        for j in range(n_active):
            i = active[j]
            value = words[pos] >> _shift(high[i])
            pos += 1
            if value < high[i]:
                out[i] = value
            else:
                active[rest] = i
                rest += 1
        n_active = rest
    return pos


@nb.njit(cache=True, nogil=True)
def _bernoulli_exp(words, pos, num, den, out):
    """``noise._bernoulli_exp``: ``out[i]`` ~ Bernoulli(exp(−num[i]/den[i])); returns
    the next position (−1 when the buffer runs out)."""
    m = len(num)
    k = np.ones(m, dtype=np.uint64)
    active = np.empty(m, dtype=np.int64)
    n_active = 0
    for i in range(m):
        if num[i] > np.uint64(0):
            active[n_active] = i
            n_active += 1
    high = np.empty(m, dtype=np.uint64)
    drawn = np.empty(m, dtype=np.uint64)
    while n_active:
        for j in range(n_active):
            high[j] = den[active[j]] * k[active[j]]
        pos = _below(words, pos, high[:n_active], drawn[:n_active])
        if pos < 0:
            return -1
        rest = 0
        for j in range(n_active):
            i = active[j]
            if drawn[j] < num[i]:
                k[i] += np.uint64(1)
                active[rest] = i
                rest += 1
        n_active = rest
    for i in range(m):
        out[i] = (k[i] % np.uint64(2)) == np.uint64(1)
    return pos


@nb.njit((nb.uint64[::1], _u64, _u64, nb.int64[::1]), cache=True, nogil=True)
def stream_discrete_laplace(words, s, t, out):
    """``noise.sample_discrete_laplace`` of ``len(out)`` items at rate s/t from the
    stream's next ``words``, round by round as the vectorised sampler reads them.
    Returns how many words it read, or −1 when ``words`` ran out (``out`` is then not
    all set: call again with more of the same stream)."""
    n = len(out)
    active = np.arange(n)
    n_active = n
    pos = 0
    u = np.empty(n, dtype=np.uint64)
    tees = np.full(n, t, dtype=np.uint64)
    ones = np.ones(n, dtype=np.uint64)
    keep = np.empty(n, dtype=np.bool_)
    more = np.empty(n, dtype=np.bool_)
    v = np.empty(n, dtype=np.uint64)
    going = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = 0
    while n_active:
        m = n_active
        pos = _below(words, pos, tees[:m], u[:m])
        if pos < 0:
            return -1
        pos = _bernoulli_exp(words, pos, u[:m], tees[:m], keep[:m])
        if pos < 0:
            return -1
        # V ~ Geometric(1 − e^-1): Bernoulli(e^-1) successes until the first failure.
        n_going = 0
        for j in range(m):
            v[j] = 0
            if keep[j]:
                going[n_going] = j
                n_going += 1
        while n_going:
            pos = _bernoulli_exp(words, pos, ones[:n_going], ones[:n_going], more[:n_going])
            if pos < 0:
                return -1
            rest = 0
            for g in range(n_going):
                if more[g]:
                    j = going[g]
                    v[j] += np.uint64(1)
                    going[rest] = j
                    rest += 1
            n_going = rest
        if pos + m > len(words):
            return -1
        rest = 0
        for j in range(m):
            y = (u[j] + t * v[j]) // s
            negative = (words[pos + j] >> np.uint64(63)) == np.uint64(1)
            if keep[j] and not (negative and y == np.uint64(0)):
                out[active[j]] = -np.int64(y) if negative else np.int64(y)
            else:
                active[rest] = active[j]
                rest += 1
        pos += m
        n_active = rest
    return pos


@nb.njit((nb.uint64[::1], nb.uint64[::1], _u64, nb.uint64[:, :, ::1]), cache=True, nogil=True)
def counter_blocks(keys, classes, first, out):
    """The cipher's input blocks of item e at counters ``first``, ``first`` + 1, …:
    ``out[e, j]`` = (key, class | counter << 32) as two little-endian words, in one
    pass (numpy's broadcast writes took as long as the cipher itself)."""
    n_blocks = out.shape[1]
    for e in range(out.shape[0]):
        key, cls = keys[e], classes[e]
        for j in range(n_blocks):
            out[e, j, 0] = key
            out[e, j, 1] = cls | ((first + np.uint64(j)) << np.uint64(32))
