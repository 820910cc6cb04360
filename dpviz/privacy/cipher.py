"""AES-256 from the system's OpenSSL (libcrypto) called through ``ctypes``, which lets go
of the GIL while the cipher runs.

``cryptography``'s cipher contexts hold the GIL during ``update_into`` (measured: two
threads encrypting 64 KB pieces took 1.2× the serial time, not 0.5×), so a sweep's two
worker threads queued on it for every noise draw. The same OpenSSL AES called through a
``ctypes.CDLL`` function runs without the GIL: the other thread's Python runs meanwhile.

Same cipher, same bytes: ECB and CTR on a 256-bit key are fully specified by AES, so
this gives what ``cryptography`` gives (``tests/privacy/test_cipher.py`` compares them).
Where no libcrypto can be loaded, :data:`AVAILABLE` is False and
:mod:`dpviz.privacy.noise` keeps ``cryptography``.

Privacy: the key is handed to OpenSSL for the life of one cipher context, freed as soon
as the call (ECB) or the stream (CTR) ends; nothing here stores or prints it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import weakref

import numpy as np

__all__ = ["AVAILABLE", "CtrStream", "ecb_encrypt"]

_CHUNK = 1 << 16  # bytes an update takes (cache-sized pieces: see noise._AES_CHUNK)


def _load():
    """libcrypto's EVP functions with their types, or None where it is not loadable."""
    for name in ("libcrypto.so.3", ctypes.util.find_library("crypto")):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)  # CDLL (not PyDLL): calls release the GIL
            ptr, cint = ctypes.c_void_p, ctypes.c_int
            lib.EVP_CIPHER_CTX_new.restype = ptr
            lib.EVP_CIPHER_CTX_new.argtypes = []
            lib.EVP_CIPHER_CTX_free.restype = None
            lib.EVP_CIPHER_CTX_free.argtypes = [ptr]
            lib.EVP_aes_256_ecb.restype = ptr
            lib.EVP_aes_256_ctr.restype = ptr
            lib.EVP_EncryptInit_ex.restype = cint
            lib.EVP_EncryptInit_ex.argtypes = [ptr, ptr, ptr, ctypes.c_char_p, ctypes.c_char_p]
            lib.EVP_CIPHER_CTX_set_padding.restype = cint
            lib.EVP_CIPHER_CTX_set_padding.argtypes = [ptr, cint]
            lib.EVP_EncryptUpdate.restype = cint
            lib.EVP_EncryptUpdate.argtypes = [ptr, ptr, ctypes.POINTER(cint), ptr, cint]
            return (
                lib,
                _cipher(lib, b"AES-256-ECB", "EVP_aes_256_ecb"),
                _cipher(lib, b"AES-256-CTR", "EVP_aes_256_ctr"),
            )
        except (OSError, AttributeError):
            continue
    return None, None, None


def _cipher(lib, name: bytes, legacy: str):
    """The cipher fetched once (OpenSSL 3: an init with the legacy getter looks it up
    again each time, 7 µs against 4 µs), or the legacy getter's (OpenSSL 1.1)."""
    fetch = getattr(lib, "EVP_CIPHER_fetch", None)
    if fetch is not None:
        fetch.restype = ctypes.c_void_p
        fetch.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
        found = fetch(None, name, None)
        if found:
            return found  # kept for the life of the process
    return getattr(lib, legacy)()


def _address(array: np.ndarray) -> int:
    """The address of a C-contiguous array's first byte: through the buffer protocol
    (0.5 µs) where the array is writable and not empty, else ``ndarray.ctypes`` (1.4 µs;
    ``__array_interface__`` builds a structured dtype's description: 5 µs)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(array))
    except (TypeError, ValueError):
        return array.ctypes.data


_lib, _ECB, _CTR = _load()
AVAILABLE = _lib is not None


def _context(key: bytes, cipher, iv: bytes | None):
    """A new encryption context on ``key`` (the caller frees it)."""
    if len(key) != 32:
        raise ValueError(f"an AES-256 key has 32 bytes, got {len(key)}")
    ctx = _lib.EVP_CIPHER_CTX_new()
    if not ctx:
        raise MemoryError("OpenSSL could not allocate a cipher context")
    if _lib.EVP_EncryptInit_ex(ctx, cipher, None, key, iv) != 1:
        _lib.EVP_CIPHER_CTX_free(ctx)
        raise RuntimeError("OpenSSL refused the AES-256 key")
    _lib.EVP_CIPHER_CTX_set_padding(ctx, 0)
    return ctx


def _update(ctx, source: int, target: int, n: int) -> None:
    """Encrypt ``n`` bytes at address ``source`` into ``target``, in cache-sized pieces."""
    written = ctypes.c_int(0)
    for a in range(0, n, _CHUNK):
        b = min(n, a + _CHUNK)
        if _lib.EVP_EncryptUpdate(ctx, target + a, ctypes.byref(written), source + a, b - a) != 1:
            raise RuntimeError("OpenSSL's AES update failed")


def ecb_encrypt(key: bytes, data: np.ndarray) -> np.ndarray:
    """AES-256-ECB of the bytes of ``data`` (C-contiguous, a whole number of 16-byte
    blocks) as little-endian 64-bit words, without holding the GIL."""
    data = np.ascontiguousarray(data)
    n = data.nbytes
    if n % 16:
        raise ValueError(f"ECB takes whole 16-byte blocks, got {n} bytes")
    out = np.empty(n // 8, dtype="<u8")
    if n:
        ctx = _context(key, _ECB, None)
        try:
            _update(ctx, _address(data), _address(out), n)
        finally:
            _lib.EVP_CIPHER_CTX_free(ctx)
    return out


class CtrStream:
    """The AES-256-CTR keystream of ``key`` from a zero counter block, read in order
    (what ``cryptography``'s CTR encryptor gives for zero bytes)."""

    __slots__ = ("_ctx", "_zeros", "__weakref__")

    def __init__(self, key: bytes):
        self._ctx = _context(key, _CTR, bytes(16))
        self._zeros = np.zeros(_CHUNK, dtype=np.uint8)
        # The context (and the key schedule in it) is freed with the stream.
        weakref.finalize(self, _lib.EVP_CIPHER_CTX_free, self._ctx)

    def __reduce__(self):
        raise TypeError("a cipher stream holds a secret key and cannot be pickled")

    def words(self, n: int) -> np.ndarray:
        """The stream's next ``n`` 64-bit words (little-endian)."""
        out = np.empty(int(n), dtype="<u8")
        target, size = _address(out), out.nbytes
        written = ctypes.c_int(0)
        zeros = _address(self._zeros)
        for a in range(0, size, _CHUNK):
            b = min(size, a + _CHUNK)
            if (
                _lib.EVP_EncryptUpdate(self._ctx, target + a, ctypes.byref(written), zeros, b - a)
                != 1
            ):
                raise RuntimeError("OpenSSL's AES update failed")
        return out
