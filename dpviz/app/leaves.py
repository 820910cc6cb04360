"""The Leaves page's teaching panel: what every mechanism releases for one leaf.

Exact probabilities from ``LeafMechanism.probabilities``: no data is read, so this panel
is public; the rest of the Leaves page shows true leaf counts and is NOT private.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dpviz.figures.common import mechanism_label
from dpviz.privacy.mechanisms import MECHANISMS, valid_epsilon


def parse_counts(text: str) -> list[int]:
    """Class counts typed as "5, 10" (``ValueError`` with a message otherwise)."""
    try:
        counts = [int(v) for v in str(text).replace(";", ",").split(",") if v.strip()]
    except ValueError:
        raise ValueError("type whole numbers separated by commas, e.g. 5, 10") from None
    if len(counts) < 2:
        raise ValueError("a leaf needs a count for at least 2 classes, e.g. 5, 10")
    if any(c < 0 for c in counts):
        raise ValueError("counts cannot be negative")
    return counts


def leaf_release_table(
    counts: Sequence[int], epsilon: float, classes: Sequence[str] | None = None
) -> pd.DataFrame:
    """Per mechanism: the exact chance of releasing each class for a leaf with these
    class counts and this per-leaf ε, and the chance of a flip (releasing a class that
    is not a true majority). Rows keep the registry order; ``classes`` names the
    columns when it has one name per count."""
    epsilon = valid_epsilon(epsilon)
    counts = np.asarray([list(counts)], dtype=np.int64)
    k = counts.shape[1]
    names = [str(c) for c in classes] if classes is not None and len(classes) == k else None
    names = names or [f"class {i + 1}" for i in range(k)]
    rows = []
    for m, mech in MECHANISMS.items():
        probs = mech.probabilities(counts, epsilon)[0]
        row = {"mechanism": mechanism_label(m)}
        row.update({f"P({name})": float(p) for name, p in zip(names, probs)})
        row["P(abstain)"] = float(probs[k]) if mech.abstains else 0.0
        row["P(flip)"] = float(mech.flip_probability(counts, epsilon)[0])
        rows.append(row)
    return pd.DataFrame(rows)
