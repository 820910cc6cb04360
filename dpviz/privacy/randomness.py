"""Counter-based PUBLIC pseudo-randomness keyed by 64-bit node identifiers.

The tree structure and the record→tree hash are drawn from hashes of a node's key or a
record's values, not from a sequential generator, so that the same node always gets the
same draw whatever order nodes are visited in (training, prediction, a sweep, a data
partition). SplitMix64 is invertible: what it draws is public by design (it follows from
``random_state``). Nothing that touches the data is drawn here; noise comes from
:mod:`dpviz.privacy.noise`, keyed by a secret.
"""

from __future__ import annotations

import numpy as np

# splitmix64's increment (2^64/φ), shared by the public keyed hashes that route records.
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_S29 = np.uint64(29)

SALT_FEATURE = np.uint64(0x243F6A8885A308D3)
SALT_THRESHOLD = np.uint64(0x13198A2E03707344)
SALT_CHILD = np.uint64(0xA4093822299F31D0)
SALT_TREE = np.uint64(0x082EFA98EC4E6C89)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """Mix 64-bit integers (SplitMix64 finaliser); wraps modulo 2**64."""
    x = np.asarray(x, dtype=np.uint64)
    # 1-d arrays wrap silently; numpy scalars would warn on the intended overflow.
    z = x.reshape(-1).copy()
    _splitmix64_inplace(z, np.empty_like(z))
    return z.reshape(x.shape)


def _splitmix64_inplace(z: np.ndarray, scratch: np.ndarray) -> None:
    """:func:`splitmix64` of a 1-d uint64 array, overwriting it; ``scratch`` is a buffer
    of the same shape. Used on whole data partitions, where a fresh array per step costs
    more in page faults than the arithmetic."""
    z += GOLDEN
    np.right_shift(z, _S30, out=scratch)
    z ^= scratch
    z *= _MUL1
    np.right_shift(z, _S27, out=scratch)
    z ^= scratch
    z *= _MUL2
    np.right_shift(z, _S31, out=scratch)
    z ^= scratch


def hash_columns(columns: list[np.ndarray], seed: int) -> np.ndarray:
    """A keyed 64-bit hash of each row of equal-length uint64 ``columns``.

    Each column is folded in by xor, a multiply by its own odd constant and an xor-shift
    (each step a bijection of the running value), and a SplitMix64 finaliser mixes the
    result: about five array passes per column instead of SplitMix's nine twice.
    """
    n = len(columns[0]) if columns else 0
    mixed = np.full(n, splitmix64(np.uint64(seed)), dtype=np.uint64)
    scratch = np.empty(n, dtype=np.uint64)
    for j, column in enumerate(columns):
        mixed ^= column
        mixed *= splitmix64(np.uint64(j + 1) ^ SALT_CHILD) | np.uint64(1)
        np.right_shift(mixed, _S29, out=scratch)
        mixed ^= scratch
    _splitmix64_inplace(mixed, scratch)
    return mixed


def to_unit(z: np.ndarray) -> np.ndarray:
    """Map 64-bit hashes to floats strictly inside (0, 1)."""
    return ((z >> _S11).astype(np.float64) + 0.5) * 2.0**-53


def uniform(keys: np.ndarray, salt: np.uint64) -> np.ndarray:
    """One uniform draw in (0, 1) per key, independent across salts."""
    return to_unit(splitmix64(np.asarray(keys, dtype=np.uint64) ^ salt))


def child_keys(parent_keys: np.ndarray, child_index: np.ndarray) -> np.ndarray:
    """Key of child ``child_index`` of each parent node."""
    idx = np.asarray(child_index, dtype=np.uint64)
    return splitmix64(np.asarray(parent_keys, dtype=np.uint64) ^ splitmix64(idx ^ SALT_CHILD))


def tree_root_keys(structure_seed: int, n_trees: int) -> np.ndarray:
    """Root keys of ``n_trees`` trees drawn from one structure seed."""
    base = splitmix64(np.uint64(structure_seed))
    return splitmix64(base ^ splitmix64(np.arange(n_trees, dtype=np.uint64) ^ SALT_TREE))
