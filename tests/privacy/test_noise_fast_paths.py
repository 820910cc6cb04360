"""The noise's fast paths give the numbers of the paths they replace: the chunked
cipher calls, and the compiled keyed discrete Laplace sampler over buffered words."""

from __future__ import annotations

import numpy as np
import pytest

from dpviz.compiled import kernels
from dpviz.privacy import noise
from dpviz.privacy.noise import _BLOCK, NoiseSource


@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 4097, 70_001])
def test_chunked_cipher_equals_one_call(n):
    source = NoiseSource.replayable(3)
    keys = np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    blocks = np.empty(n, dtype=_BLOCK)
    blocks["key"], blocks["cls"], blocks["counter"] = keys, 2, 9
    whole = np.frombuffer(source._encrypt(blocks.tobytes()), dtype="<u8")[0::2]
    np.testing.assert_array_equal(source.words(keys, 2, 9), whole)


@pytest.mark.skipif(kernels.get(wait=True) is None, reason="numba is not installed")
@pytest.mark.parametrize("epsilon", [2.0**-20, 1e-3, 0.01, 0.123456, 1.0, 3.0, 10.0, 40.0])
def test_compiled_discrete_laplace_equals_vectorised(monkeypatch, epsilon):
    source = NoiseSource.replayable(11)
    keys = np.arange(6_007, dtype=np.uint64) * np.uint64(7919) + np.uint64(5)
    assert noise._compiled_laplace is not None  # registered when the kernels loaded
    compiled = source.discrete_laplace(keys, 3, epsilon)
    # Small buffers: most items run out of words and are read again with more.
    monkeypatch.setattr(noise, "_LAPLACE_WORDS", 2)
    monkeypatch.setattr(noise, "_LAPLACE_ITEMS", 1000)
    refilled = source.discrete_laplace(keys, 3, epsilon)
    # One buffer after another instead of side by side on the kernels' threads.
    assert noise._map_chunks is not None  # registered with the sampler
    monkeypatch.setattr(noise, "_map_chunks", None)
    serial = source.discrete_laplace(keys, 3, epsilon)
    monkeypatch.setattr(noise, "_compiled_laplace", None)
    vectorised = source.discrete_laplace(keys, 3, epsilon)
    np.testing.assert_array_equal(compiled, vectorised)
    np.testing.assert_array_equal(refilled, vectorised)
    np.testing.assert_array_equal(serial, vectorised)
    # And it is the law asked for: Var = 2e^-ε' / (1 - e^-ε')², ε' ≤ ε (rounded down).
    s, t = noise.epsilon_fraction(epsilon)
    q = np.exp(-s / t)
    sd = np.sqrt(2 * q) / (1 - q)
    if sd > 0.05:
        n = compiled.size
        assert abs(compiled.std() / sd - 1) < 6 / np.sqrt(n)


def test_uniform_below_one_bound_and_many():
    words = iter(np.random.default_rng(0).integers(0, 2**64, 10_000, dtype=np.uint64))

    def draw(active):
        return np.array([next(words) for _ in active], dtype=np.uint64)

    same = noise.uniform_below(draw, np.full(500, 7))
    mixed = noise.uniform_below(draw, np.array([7, 1, 1000] * 100))
    assert same.max() < 7 and set(np.unique(same)) == set(range(7))
    assert (mixed[1::3] == 0).all() and mixed[0::3].max() < 7 and mixed[2::3].max() < 1000


@pytest.mark.parametrize("n", [1, 2, 5, 16])
@pytest.mark.parametrize("epsilon", [2.0**-20, 0.0123, 1.0, 25.0])
def test_small_stream_draws_equal_vectorised(n, epsilon):
    for seed in range(40):
        fast = NoiseSource.replayable(seed).generator()
        slow = NoiseSource.replayable(seed).generator()
        ours = fast.discrete_laplace(epsilon, n)
        theirs = noise.sample_discrete_laplace(lambda a, slow=slow: slow.words(len(a)), n, epsilon)
        np.testing.assert_array_equal(ours, theirs)
        assert ours.dtype == np.int64 and ours.shape == (n,)
        assert fast.words(1)[0] == slow.words(1)[0]  # the stream read to the same place


@pytest.mark.skipif(kernels.get(wait=True) is None, reason="numba is not installed")
@pytest.mark.parametrize("n", [17, 320, 3_001])
@pytest.mark.parametrize("epsilon", [2.0**-20, 0.02, 0.65, 2.0, 25.0])
def test_compiled_stream_draws_equal_vectorised(monkeypatch, n, epsilon):
    assert noise._compiled_stream_laplace is not None  # registered with the kernels
    for seed in range(3):
        fast = NoiseSource.replayable(seed).generator()
        slow = NoiseSource.replayable(seed).generator()
        fast.words(3)  # a stream read part-way first, as a release's generator may be
        slow.words(3)
        ours = fast.discrete_laplace(epsilon, n)
        theirs = noise.sample_discrete_laplace(lambda a, slow=slow: slow.words(len(a)), n, epsilon)
        np.testing.assert_array_equal(ours, theirs)
        assert ours.dtype == np.int64 and ours.shape == (n,)
        # The words the compiled sampler drew ahead and did not use are read next.
        np.testing.assert_array_equal(fast.words(70_000), slow.words(70_000))


@pytest.mark.skipif(kernels.get(wait=True) is None, reason="numba is not installed")
def test_compiled_stream_draws_refill_a_short_buffer(monkeypatch):
    kernel = noise._compiled_stream_laplace
    out = np.empty(50, dtype=np.int64)
    words = NoiseSource.replayable(5).generator()._peek(10)
    assert kernel(words, np.uint64(1), np.uint64(1 << 20), out) == -1  # ran out: −1
    # One word an item to start with: the buffer doubles until the rounds fit in it.
    monkeypatch.setattr(noise, "_STREAM_WORDS", 1)
    fast, slow = NoiseSource.replayable(5).generator(), NoiseSource.replayable(5).generator()
    theirs = noise.sample_discrete_laplace(lambda a: slow.words(len(a)), 50, 0.3)
    np.testing.assert_array_equal(fast.discrete_laplace(0.3, 50), theirs)
    assert fast.words(1)[0] == slow.words(1)[0]


def test_keystream_in_pieces_equals_one_piece():
    one, pieces = NoiseSource.replayable(8).generator(), NoiseSource.replayable(8).generator()
    whole = one.words(20_000)  # 160 KB: drawn 64 KB at a time
    parts = [pieces.words(n) for n in (1, 8_191, 5, 11_803)]
    np.testing.assert_array_equal(np.concatenate(parts), whole)


def test_items_in_place_map_in_the_calling_thread(monkeypatch):
    """A sweep's parts draw their noise buffers in their own thread: inside
    ``items_in_place`` no item goes to the shared threads, outside they do."""
    import threading

    monkeypatch.setattr(kernels, "cores", lambda: 2)
    me = threading.get_ident()

    def where(_):
        return threading.get_ident()

    with kernels.items_in_place():
        assert kernels.map_on_threads(where, range(6)) == [me] * 6
        with kernels.items_in_place():
            pass
        assert kernels.map_on_threads(where, range(6)) == [me] * 6  # still in place
    assert me not in kernels.map_on_threads(where, range(6))
