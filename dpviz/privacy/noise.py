"""Secret noise for everything that touches the data (SPEC §1, "Randomness").

A :class:`NoiseSource` is AES-256 keyed by a fresh 256-bit secret from the operating
system (``secrets.token_bytes``) for every release. It is used in two ways:

- as a keyed pseudorandom function of (leaf key, class, counter): one AES block per
  counter, evaluated for all leaves in one call, so a leaf's noise does not depend on
  which other leaves exist or in what order they are visited (a distributed fit and
  an in-memory fit release the same leaves the same way). A uniform draw reads the
  block's first 64-bit word; the discrete Laplace sampler reads both words of each
  block in turn (AES's output block is uniform as a whole, so its two halves are two
  independent uniform words: the same law from half the cipher work);
- as a sequential stream (AES in counter mode, :meth:`NoiseSource.generator`) for
  the greedy trees, DPBoost and the MCMC sampler.

The key lives only as long as the release that uses it: it is never derived from a
user seed, never stored in an estimator or a model file, and never printed.
Knowing the public ``random_state`` (tree structure, record→tree hash) tells an
attacker nothing about the noise.

:meth:`NoiseSource.replayable` derives the key from a seed instead. That mode exists
for tests, teaching and reproducing the papers' figures; its releases are NOT
private (anyone with the seed replays the noise and subtracts it), and every model
built with it says so.

Integer outputs (noisy counts) use the exact discrete Laplace sampler of Canonne,
Kamath & Steinke (2020), which draws only uniform integers and so has no
floating-point side channel (Mironov 2012).
"""

from __future__ import annotations

import hashlib
import math
import secrets
from collections.abc import Callable

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from dpviz.privacy import cipher
from dpviz.privacy.randomness import to_unit

KEY_BYTES = 32
NOT_PRIVATE_NOTE = "NOT private: the noise can be replayed from its seed"
# ε is rounded down to a fraction with this denominator for the exact discrete Laplace
# sampler: more noise than asked for, never less.
_EPSILON_DENOMINATOR = 1 << 20
_BLOCK = np.dtype([("key", "<u8"), ("cls", "<u4"), ("counter", "<u4")])
_AES_CHUNK = 1 << 16  # bytes a call of the cipher takes (see NoiseSource._encrypt_blocks)
# The keyed discrete Laplace sampler compiled (``dpviz.compiled.kernels`` registers it when
# its kernels load: privacy imports nothing from models); None: the vectorised sampler.
_compiled_laplace = None
_map_chunks = None  # runs the compiled sampler's buffers on the kernels' threads
# The stream's discrete Laplace sampler and the keyed sampler's block filler compiled
# (``stream_discrete_laplace``, ``counter_blocks``, registered the same way); None: numpy.
_compiled_stream_laplace = None
_compiled_blocks = None
_LAPLACE_WORDS = 16  # words (8 blocks) drawn ahead per item (~8-13 used on average)
# Items per buffer: 8,192 (1 MB of blocks at 16 words) keep blocks, words and the
# sampler's reads in cache; 65,536 took 1.4x as long (37,516 draws, loaded machine).
_LAPLACE_ITEMS = 1 << 13
_STREAM_WORDS = 16  # a stream's words drawn ahead per item (twice more while short)


def register_compiled_laplace(kernel, map_chunks=None) -> None:
    """Use ``kernel`` (``discrete_laplace_words``) for keyed discrete Laplace noise; it
    gives the same numbers as the vectorised sampler from the same words.
    ``map_chunks(fn, chunks)`` (``list(map(fn, chunks))`` on the kernels' threads) draws
    the buffers of many items side by side: each item's noise is a function of its own
    key and words, so the numbers are the same in any order."""
    global _compiled_laplace, _map_chunks
    _compiled_laplace = kernel
    _map_chunks = map_chunks


def register_compiled_noise(stream_laplace, counter_blocks) -> None:
    """Use ``stream_laplace`` (``stream_discrete_laplace``) for a
    :class:`SecureGenerator`'s discrete Laplace noise, and ``counter_blocks`` to write
    the keyed sampler's cipher blocks. The first reads the stream's words in the
    vectorised sampler's order (the same numbers, and the stream left where that would
    leave it); the second writes the blocks numpy writes."""
    global _compiled_stream_laplace, _compiled_blocks
    _compiled_stream_laplace = stream_laplace
    _compiled_blocks = counter_blocks


class NoiseSource:
    """A secret-keyed source of randomness for one release.

    Use :meth:`fresh` (a new OS secret, the default everywhere) or
    :meth:`replayable` (derived from a seed: NOT private). ``private`` says which.
    """

    __slots__ = ("_key", "private", "_stream_blocks", "_stream")

    def __init__(self, key: bytes, private: bool):
        if len(key) != KEY_BYTES:
            raise ValueError(f"a noise key has {KEY_BYTES} bytes, got {len(key)}")
        self._key = key
        self.private = private
        self._stream = None
        self._stream_blocks = 0

    @classmethod
    def fresh(cls) -> NoiseSource:
        """A source keyed by 256 fresh bits from the operating system."""
        return cls(secrets.token_bytes(KEY_BYTES), private=True)

    @classmethod
    def replayable(cls, seed: int) -> NoiseSource:
        """A source whose key is derived from ``seed``: NOT private (replayable)."""
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"a noise seed must be a whole number ≥ 0, got {seed!r}")
        digest = hashlib.sha256(b"dpviz replayable noise\0" + str(int(seed)).encode()).digest()
        return cls(digest, private=False)

    @classmethod
    def for_release(cls, noise_seed: int | None) -> NoiseSource:
        """Fresh secret noise, or replayable noise when a ``noise_seed`` is given."""
        return cls.fresh() if noise_seed is None else cls.replayable(noise_seed)

    def __repr__(self) -> str:  # never show the key
        return f"NoiseSource(private={self.private})"

    def __reduce__(self):
        raise TypeError("a NoiseSource holds a secret key and cannot be pickled")

    def child(self, label: int) -> NoiseSource:
        """An independent source for a labelled sub-release (a batch, a class, an ε)."""
        blocks = np.zeros(2, dtype=_BLOCK)
        blocks["key"] = [0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFE]
        blocks["cls"] = 0xFFFF_FFFF
        blocks["counter"] = int(label) & 0xFFFF_FFFF
        blocks["cls"][1] = (int(label) >> 32) & 0xFFFF_FFFF
        return NoiseSource(self._encrypt(blocks.tobytes()), self.private)

    # --- keyed pseudorandom function ------------------------------------------------

    def _encrypt(self, data: bytes) -> bytes:
        if cipher.AVAILABLE:  # OpenSSL without the GIL (dpviz.privacy.cipher)
            return cipher.ecb_encrypt(self._key, np.frombuffer(data, dtype=np.uint8)).tobytes()
        encryptor = Cipher(algorithms.AES(self._key), modes.ECB()).encryptor()
        return encryptor.update(data) + encryptor.finalize()

    def _encrypt_blocks(self, blocks: np.ndarray) -> np.ndarray:
        """AES (ECB) of an array of 16-byte blocks, as little-endian 64-bit words (two a
        block). 64 KB at a time into one preallocated buffer: a single ``update`` of
        megabytes ran at 0.4-0.5 GB/s here, 64 KB pieces at 4-7 GB/s. Through
        :mod:`dpviz.privacy.cipher` where it loads: the same bytes, the GIL released."""
        if cipher.AVAILABLE:
            return cipher.ecb_encrypt(self._key, blocks)
        data = memoryview(np.ascontiguousarray(blocks).reshape(-1).view(np.uint8))
        n = len(data)
        out = np.empty(n // 8 + 2, dtype="<u8")  # a block's slack that update_into asks
        target = memoryview(out.view(np.uint8))
        encryptor = Cipher(algorithms.AES(self._key), modes.ECB()).encryptor()
        for a in range(0, n, _AES_CHUNK):
            b = min(n, a + _AES_CHUNK)
            encryptor.update_into(data[a:b], target[a : b + 15])
        encryptor.finalize()
        return out[: n // 8]

    def words(self, keys: np.ndarray, classes, counter) -> np.ndarray:
        """One pseudorandom 64-bit word per (key, class, counter) (AES of the block)."""
        keys = np.asarray(keys, dtype=np.uint64)
        blocks = np.empty(keys.shape, dtype=_BLOCK)
        blocks["key"] = keys
        blocks["cls"] = classes
        blocks["counter"] = counter
        return self._encrypt_blocks(blocks)[0::2].reshape(keys.shape).copy()

    def uniforms(self, keys: np.ndarray, n_classes: int) -> np.ndarray:
        """Uniforms in (0, 1) of shape (len(keys), n_classes): one per leaf and class."""
        keys = np.asarray(keys, dtype=np.uint64)
        grid_keys = np.repeat(keys[:, None], n_classes, axis=1)
        classes = np.broadcast_to(np.arange(n_classes, dtype=np.uint32), grid_keys.shape)
        return to_unit(self.words(grid_keys, classes, 0))

    def discrete_laplace(self, keys: np.ndarray, n_classes: int, epsilon: float) -> np.ndarray:
        """Exact discrete Laplace noise, P(z) ∝ exp(−ε|z|), per leaf and class (int64)."""
        keys = np.asarray(keys, dtype=np.uint64)
        grid_keys = np.repeat(keys[:, None], n_classes, axis=1).reshape(-1)
        classes = np.tile(np.arange(n_classes, dtype=np.uint32), len(keys))
        if _compiled_laplace is not None:
            z = self._buffered_laplace(grid_keys, classes, epsilon)
            return z.reshape(len(keys), n_classes)
        # Each (leaf, class) reads its own word sequence, the two words of the block at
        # counter 1, then of counter 2, …: its noise is a function of its key alone,
        # whatever other leaves are drawn with it.
        used = np.zeros(len(grid_keys), dtype=np.uint32)

        def draw(active: np.ndarray) -> np.ndarray:
            word = used[active]
            blocks = np.empty(len(active), dtype=_BLOCK)
            blocks["key"] = grid_keys[active]
            blocks["cls"] = classes[active]
            blocks["counter"] = word // np.uint32(2) + np.uint32(1)
            pairs = self._encrypt_blocks(blocks).reshape(-1, 2)
            used[active] += np.uint32(1)
            return pairs[np.arange(len(active)), word % np.uint32(2)]

        z = sample_discrete_laplace(draw, len(grid_keys), epsilon)
        return z.reshape(len(keys), n_classes)

    def _buffered_laplace(self, keys: np.ndarray, classes: np.ndarray, epsilon: float):
        """:meth:`discrete_laplace`'s noise, the same numbers: each item's words (two a
        block, counters 1, 2, …) drawn ahead in one cipher call (``_LAPLACE_WORDS`` a
        item; the few that need more get three times as many again, joined after the
        ones they read, …) and read by the compiled sampler (item by item, in the order
        the vectorised sampler reads them), instead of one cipher call per round of
        rejections (hundreds of rounds for 51,200 items)."""
        s, t = epsilon_fraction(epsilon)
        out = np.empty(len(keys), dtype=np.int64)
        classes = classes.astype(np.uint64)

        def buffer(a: int) -> None:  # items a … a + _LAPLACE_ITEMS − 1 (disjoint parts of out)
            todo = np.arange(a, min(len(keys), a + _LAPLACE_ITEMS))
            words = self._counter_words(keys[todo], classes[todo], 1, (_LAPLACE_WORDS + 1) // 2)
            while len(todo):
                short = np.zeros(len(todo), dtype=bool)
                values = np.empty(len(todo), dtype=np.int64)
                _compiled_laplace(words, np.uint64(s), np.uint64(t), values, short)
                out[todo[~short]] = values[~short]
                if not short.any():
                    break
                # Items that ran out read their words again with three times as many
                # more (counters after theirs): a fifth of them at ε ≈ 0.65.
                todo, read = todo[short], words[short]
                n_blocks = read.shape[1] // 2
                more = self._counter_words(keys[todo], classes[todo], n_blocks + 1, 3 * n_blocks)
                words = np.concatenate([read, more], axis=1)

        starts = range(0, len(keys), _LAPLACE_ITEMS)
        if _map_chunks is not None and len(starts) > 1:
            _map_chunks(buffer, starts)  # side by side: the same numbers in any order
        else:
            for a in starts:
                buffer(a)
        return out

    def _counter_words(self, keys, classes, first: int, n_blocks: int) -> np.ndarray:
        """The cipher blocks of each (key, class) at counters first … first + n_blocks
        − 1, as (items, 2 n_blocks) words: each item's word sequence, two words a block."""
        # A block is two little-endian words: the key, then class | counter << 32.
        blocks = np.empty((len(keys), n_blocks, 2), dtype="<u8")
        if _compiled_blocks is not None:
            _compiled_blocks(keys, classes, np.uint64(first), blocks)
        else:
            blocks[:, :, 0] = keys[:, None]
            counters = np.arange(first, first + n_blocks, dtype=np.uint64) << np.uint64(32)
            blocks[:, :, 1] = classes.astype(np.uint64)[:, None] | counters
        return self._encrypt_blocks(blocks).reshape(len(keys), 2 * n_blocks)

    # --- sequential stream ----------------------------------------------------------

    def generator(self) -> SecureGenerator:
        """A sequential generator (AES-CTR keystream) on this source's key."""
        return SecureGenerator(self)


class SecureGenerator:
    """The few ``numpy.random.Generator`` methods dpviz's algorithms use, drawn from an
    AES-CTR keystream of a :class:`NoiseSource` (cryptographically secure)."""

    def __init__(self, source: NoiseSource):
        self.private = source.private
        child = source.child(0xC7_4000_0000)
        # The same keystream from OpenSSL without the GIL where it loads.
        self._stream = cipher.CtrStream(child._key) if cipher.AVAILABLE else None
        if self._stream is None:
            self._encryptor = Cipher(algorithms.AES(child._key), modes.CTR(b"\0" * 16)).encryptor()
        # Words of the stream drawn ahead and not read yet (the compiled sampler's buffer):
        # the next reads return them first, so the stream's order never changes.
        self._ahead = np.empty(0, dtype="<u8")

    def _draw(self, n: int) -> np.ndarray:
        """The keystream's next ``n`` words, 64 KB at a time into one buffer (as
        :meth:`NoiseSource._encrypt_blocks`: one ``update`` of megabytes ran ~10× slower)."""
        if self._stream is not None:
            return self._stream.words(n)
        size = 8 * int(n)
        if size <= _AES_CHUNK:
            return np.frombuffer(self._encryptor.update(bytes(size)), dtype="<u8").copy()
        zeros = memoryview(bytes(_AES_CHUNK))
        out = np.empty(int(n) + 2, dtype="<u8")  # the slack update_into asks for
        target = memoryview(out.view(np.uint8))
        for a in range(0, size, _AES_CHUNK):
            b = min(size, a + _AES_CHUNK)
            self._encryptor.update_into(zeros[: b - a], target[a : b + 15])
        return out[: int(n)]

    def words(self, n: int) -> np.ndarray:
        """``n`` independent uniform 64-bit words."""
        n = int(n)
        ahead = self._ahead
        if not len(ahead):
            return self._draw(n)
        if n <= len(ahead):
            self._ahead = ahead[n:]
            return ahead[:n].copy()
        self._ahead = ahead[:0]
        return np.concatenate([ahead, self._draw(n - len(ahead))])

    def _peek(self, n: int) -> np.ndarray:
        """The stream's next ``n`` words, left unread (the next reads return them)."""
        if len(self._ahead) < n:
            self._ahead = np.concatenate([self._ahead, self._draw(n - len(self._ahead))])
        return self._ahead[:n]

    def random(self, size=None) -> np.ndarray:
        """Uniforms strictly inside (0, 1)."""
        shape = () if size is None else size
        n = int(np.prod(shape))
        return to_unit(self.words(n)).reshape(shape)

    def laplace(self, loc: float = 0.0, scale: float = 1.0, size=None) -> np.ndarray:
        """Continuous Laplace(loc, scale) by inverting its distribution function."""
        centred = self.random(size) - 0.5
        return loc - scale * np.sign(centred) * np.log1p(-2.0 * np.abs(centred))

    def integers(self, high: int, size: int) -> np.ndarray:
        """Exactly uniform integers in [0, high) (rejection sampling)."""
        return uniform_below(lambda active: self.words(len(active)), np.full(size, high))

    def discrete_laplace(self, epsilon: float, size: int) -> np.ndarray:
        """Exact discrete Laplace noise P(z) ∝ exp(−ε|z|) (int64)."""
        if size <= _SMALL_DRAW:
            # A handful (a class prior, a record count): the same rounds on Python ints,
            # which read the stream in the same order (0.7 ms in numpy for two values).
            words = lambda count: self.words(count).tolist()  # noqa: E731
            return np.array(_small_discrete_laplace(words, int(size), epsilon), dtype=np.int64)
        if _compiled_stream_laplace is not None:
            # The compiled rounds read a buffer of the stream's next words and say how
            # many they used; the rest stay unread (~9 words an item).
            s, t = epsilon_fraction(epsilon)
            out = np.empty(int(size), dtype=np.int64)
            width = _STREAM_WORDS * int(size)
            while True:
                used = _compiled_stream_laplace(self._peek(width), np.uint64(s), np.uint64(t), out)
                if used >= 0:
                    self._ahead = self._ahead[used:]  # read: the stream moves past them
                    return out
                width *= 2
        return sample_discrete_laplace(lambda active: self.words(len(active)), size, epsilon)


# --- exact samplers (Canonne, Kamath & Steinke 2020) ----------------------------------

Draw = Callable[[np.ndarray], np.ndarray]


def epsilon_fraction(epsilon: float) -> tuple[int, int]:
    """ε rounded down to s / t with t = 2^20: the discrete Laplace sampler's exact rate."""
    epsilon = float(epsilon)
    if not math.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
    s = math.floor(epsilon * _EPSILON_DENOMINATOR)
    if s < 1:
        raise ValueError(f"epsilon {epsilon!r} is below 2^-20, too small for exact noise")
    g = math.gcd(s, _EPSILON_DENOMINATOR)
    return s // g, _EPSILON_DENOMINATOR // g


def uniform_below(draw: Draw, high: np.ndarray) -> np.ndarray:
    """Exactly uniform integers in [0, high_i) for each i, by rejection on the top bits."""
    high = np.asarray(high, dtype=np.uint64)
    out = np.zeros(len(high), dtype=np.uint64)
    # Draw ⌈log2 high⌉ bits, so at most half the draws are rejected; high = 1 needs none.
    if len(high) and (high == high[0]).all():  # one bound (the usual case): no sort
        shift = np.full(len(high), 64 - (int(high[0]) - 1).bit_length(), np.uint64)
    else:
        distinct, which = np.unique(high, return_inverse=True)
        shifts = np.array([64 - (int(h) - 1).bit_length() for h in distinct], np.uint64)
        shift = shifts[which.reshape(-1)]
    active = np.flatnonzero(high > 1)
    while len(active):
        value = draw(active) >> shift[active]
        ok = value < high[active]
        out[active[ok]] = value[ok]
        active = active[~ok]
    return out


def _bernoulli_exp(draw: Draw, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Exact Bernoulli(exp(−num/den)) for 0 ≤ num/den ≤ 1 (CKS Algorithm 1)."""
    num = np.asarray(num, dtype=np.uint64)
    den = np.asarray(den, dtype=np.uint64)
    k = np.ones(len(num), dtype=np.uint64)
    active = np.flatnonzero(num > 0)  # γ = 0: A = 0 at once, K = 1
    while len(active):
        # A ~ Bernoulli(γ / K): continue while A = 1.
        a = uniform_below(draw_subset(draw, active), den[active] * k[active]) < num[active]
        k[active[a]] += np.uint64(1)
        active = active[a]
    return (k % np.uint64(2)) == 1


def draw_subset(draw: Draw, active: np.ndarray) -> Draw:
    """``draw`` restricted to the items ``active`` (indices into the outer sample)."""
    return lambda inner: draw(active[inner])


def sample_discrete_laplace(draw: Draw, n: int, epsilon: float) -> np.ndarray:
    """``n`` exact draws of P(z) ∝ exp(−ε'|z|), ε' = :func:`epsilon_fraction` ≤ ε.

    ``draw(active)`` returns one fresh uniform 64-bit word for each index in ``active``
    (every call fresh). CKS Algorithm 2 with scale t/s, vectorised by rejection rounds.
    """
    s, t = epsilon_fraction(epsilon)
    out = np.zeros(n, dtype=np.int64)
    active = np.arange(n)
    while len(active):
        sub = draw_subset(draw, active)
        u = uniform_below(sub, np.full(len(active), t))
        keep = _bernoulli_exp(sub, u, np.full(len(active), t))
        # V ~ Geometric(1 − e^-1): count Bernoulli(e^-1) successes until the first failure.
        v = np.zeros(len(active), dtype=np.uint64)
        going = np.flatnonzero(keep)
        while len(going):
            more = _bernoulli_exp(
                draw_subset(sub, going), np.ones(len(going)), np.ones(len(going))
            )
            v[going[more]] += np.uint64(1)
            going = going[more]
        y = (u + np.uint64(t) * v) // np.uint64(s)
        negative = (sub(np.arange(len(active))) >> np.uint64(63)) == 1
        keep &= ~(negative & (y == 0))
        signed = np.where(negative, -y.astype(np.int64), y.astype(np.int64))
        out[active[keep]] = signed[keep]
        active = active[~keep]
    return out


# The vectorised sampler's rounds on Python ints, for a few values drawn from a stream.
_SMALL_DRAW = 16


def _small_below(words, high: list[int]) -> list[int]:
    """:func:`uniform_below` on lists; ``words(m)`` gives the stream's next m words."""
    out = [0] * len(high)
    shift = [64 - (h - 1).bit_length() if h > 1 else 0 for h in high]
    active = [i for i, h in enumerate(high) if h > 1]
    while active:
        values = [w >> shift[i] for w, i in zip(words(len(active)), active, strict=True)]
        rest = []
        for value, i in zip(values, active, strict=True):
            if value < high[i]:
                out[i] = value
            else:
                rest.append(i)
        active = rest
    return out


def _small_bernoulli_exp(words, num: list[int], den: list[int]) -> list[bool]:
    """:func:`_bernoulli_exp` on lists."""
    k = [1] * len(num)
    active = [i for i, x in enumerate(num) if x > 0]
    while active:
        a = _small_below(words, [den[i] * k[i] for i in active])
        rest = []
        for value, i in zip(a, active, strict=True):
            if value < num[i]:
                k[i] += 1
                rest.append(i)
        active = rest
    return [x % 2 == 1 for x in k]


def _small_discrete_laplace(words, n: int, epsilon: float) -> list[int]:
    """:func:`sample_discrete_laplace` on lists: the same words in the same order."""
    s, t = epsilon_fraction(epsilon)
    out = [0] * n
    active = list(range(n))
    while active:
        m = len(active)
        u = _small_below(words, [t] * m)
        keep = _small_bernoulli_exp(words, u, [t] * m)
        v = [0] * m
        going = [i for i in range(m) if keep[i]]
        while going:
            more = _small_bernoulli_exp(words, [1] * len(going), [1] * len(going))
            going = [i for i, again in zip(going, more, strict=True) if again]
            for i in going:
                v[i] += 1
        y = [(u[i] + t * v[i]) // s for i in range(m)]
        negative = [(w >> 63) == 1 for w in words(m)]
        rest = []
        for i in range(m):
            if keep[i] and not (negative[i] and y[i] == 0):
                out[active[i]] = -y[i] if negative[i] else y[i]
            else:
                rest.append(active[i])
        active = rest
    return out


# --- noise for a block of leaves, as the leaf mechanisms take it ---------------------


class KeyedLeafNoise:
    """The noise of the leaves ``keys`` under ``source``: a function of each leaf's key,
    so a leaf gets the same draw whatever other leaves are released with it."""

    def __init__(self, source: NoiseSource, keys: np.ndarray):
        self.source = source
        self.keys = np.asarray(keys, dtype=np.uint64)

    def uniforms(self, n_classes: int) -> np.ndarray:
        return self.source.uniforms(self.keys, n_classes)

    def discrete_laplace(self, n_classes: int, epsilon: float) -> np.ndarray:
        return self.source.discrete_laplace(self.keys, n_classes, epsilon)


class StreamLeafNoise:
    """The noise of ``n_leaves`` leaves drawn in order from a generator: a
    :class:`SecureGenerator`, or a seeded ``numpy.random.Generator`` for teaching
    demonstrations (replayable, NOT private)."""

    def __init__(self, generator, n_leaves: int):
        self.generator = generator
        self.n_leaves = int(n_leaves)

    def _words(self, n: int) -> np.ndarray:
        if isinstance(self.generator, SecureGenerator):
            return self.generator.words(n)
        return self.generator.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)

    def uniforms(self, n_classes: int) -> np.ndarray:
        return to_unit(self._words(self.n_leaves * n_classes)).reshape(self.n_leaves, n_classes)

    def discrete_laplace(self, n_classes: int, epsilon: float) -> np.ndarray:
        n = self.n_leaves * n_classes
        z = sample_discrete_laplace(lambda active: self._words(len(active)), n, epsilon)
        return z.reshape(self.n_leaves, n_classes)
