"""OpenSSL's AES through ctypes (``dpviz.privacy.cipher``, the GIL released) gives the bytes
``cryptography`` gives, so every noise draw is the same number either way."""

from __future__ import annotations

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from dpviz.privacy import cipher
from dpviz.privacy.noise import NoiseSource

pytestmark = pytest.mark.skipif(not cipher.AVAILABLE, reason="no libcrypto to load")

KEY = bytes(range(32))


@pytest.mark.parametrize("n_blocks", [0, 1, 2, 4095, 4096, 4097, 20_011])
def test_ecb_equals_cryptography(n_blocks):
    data = np.random.default_rng(n_blocks).integers(0, 256, 16 * n_blocks, dtype=np.uint8)
    encryptor = Cipher(algorithms.AES(KEY), modes.ECB()).encryptor()
    expected = encryptor.update(data.tobytes()) + encryptor.finalize()
    assert cipher.ecb_encrypt(KEY, data).tobytes() == expected


def test_ecb_refuses_a_partial_block_and_a_short_key():
    with pytest.raises(ValueError, match="16-byte blocks"):
        cipher.ecb_encrypt(KEY, np.zeros(15, dtype=np.uint8))
    with pytest.raises(ValueError, match="32 bytes"):
        cipher.ecb_encrypt(KEY[:16], np.zeros(16, dtype=np.uint8))


def test_ctr_stream_equals_cryptography_read_in_uneven_pieces():
    # Reads of odd word counts cross block and 64 KB boundaries mid-block.
    sizes = [1, 3, 2, 8191, 8193, 1, 20_000, 5]
    stream = cipher.CtrStream(KEY)
    got = np.concatenate([stream.words(n) for n in sizes])
    encryptor = Cipher(algorithms.AES(KEY), modes.CTR(bytes(16))).encryptor()
    expected = np.frombuffer(encryptor.update(bytes(8 * sum(sizes))), dtype="<u8")
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(TypeError, match="cannot be pickled"):
        stream.__reduce__()


def test_noise_is_the_same_with_either_cipher(monkeypatch):
    keys = np.arange(3_001, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)

    def draws():
        source = NoiseSource.replayable(5)
        child = source.child(77)
        generator = child.generator()
        return [
            child._key,
            source.uniforms(keys, 3),
            source.discrete_laplace(keys, 2, 0.3),
            generator.words(7),
            generator.discrete_laplace(1.5, 3),  # the small path
            generator.discrete_laplace(0.2, 5_000),  # the buffered path
            generator.random(11),
        ]

    fast = draws()
    monkeypatch.setattr(cipher, "AVAILABLE", False)
    slow = draws()
    assert fast[0] == slow[0]
    for a, b in zip(fast[1:], slow[1:], strict=True):
        np.testing.assert_array_equal(a, b)
