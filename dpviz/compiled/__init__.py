"""Compiled: the numba kernels and their loader.

Public face: the loader :mod:`dpviz.compiled.kernels` (``kernels.get(wait)`` returns the
compiled functions or None for the numpy path; ``kernels.warm_up()`` loads them in a
background thread; ``kernels.pool()`` the shared thread pool). Modules: ``kernels`` (the
loader), ``numba_kernels`` (the compiled routing, counting and column-scan loops, imported
only by the loader), ``numba_heap`` (the descent through complete trees in heap order:
predict's value sums and routing's leaf numbers), ``numba_build`` (the compiled
level-by-level tree build), ``numba_noise`` (the compiled discrete Laplace sampler over
secret words), ``numba_stream`` (the split release's stream sampler and the cipher-block
writer of the leaf noise).

Privacy: these loops compute exactly what their numpy twins next to their callers compute
(the same numbers); the privacy guarantee is stated where they are called.

Imports only dpviz.privacy (the loader registers the compiled noise sampler there).
"""

from dpviz.compiled import kernels

__all__ = ["kernels"]
