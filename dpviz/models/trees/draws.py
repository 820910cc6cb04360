"""The generators a tree's random draws take: a secret one, or a seeded (replayable) one.

Privacy role: a type only. A fit draws from a :class:`~dpviz.privacy.noise.SecureGenerator`
(fresh OS secret) unless a noise seed makes it replayable (NOT private).
"""

from __future__ import annotations

import numpy as np

from dpviz.privacy.noise import SecureGenerator

Rng = SecureGenerator | np.random.Generator
