"""The numba builders of ``dpviz.models.trees.store.NodeStore``: imported only through
``dpviz.compiled.kernels``. ``build_binary_levels`` builds binary trees (continuous
features only) below their roots; ``build_levels`` expands any unbuilt nodes of any
trees (discrete features too) level by level within a node budget.

Both build, level by level, the nodes below the nodes given (every level, or the first
few that ``NodeStore.build``'s budget allows), with the arithmetic of
``trees.expand`` / ``trees.choose_splits`` / ``_forest_splits.quantile_thresholds``
(the same SplitMix64 keys and draws, the same float operations in the same order, no
fast-math), so the store holds exactly the numbers the numpy builder writes, in the
same node order: level after level, each parent's two children side by side. The
structure is public (drawn from node keys): no data is read here.
"""

import numba as nb
import numpy as np

i32, f64, i64, u64 = nb.int32, nb.float64, nb.int64, nb.uint64


@nb.njit(inline="always")
def _mix(z):
    """``randomness.splitmix64`` of one word (wraps modulo 2**64)."""
    z += u64(0x9E3779B97F4A7C15)
    z ^= z >> u64(30)
    z *= u64(0xBF58476D1CE4E5B9)
    z ^= z >> u64(27)
    z *= u64(0x94D049BB133111EB)
    z ^= z >> u64(31)
    return z


@nb.njit(inline="always")
def _unit(z):
    """``randomness.to_unit`` of one word: a float strictly inside (0, 1)."""
    return (np.float64(z >> u64(11)) + 0.5) * 2.0**-53


@nb.njit(inline="always")
def _forward(knots, bins, base, width, x):
    """``quantile_thresholds``' distribution function at ``x`` (one feature's knots)."""
    z = (x - base) * (bins / width)
    z = min(max(z, 0.0), np.float64(bins))
    b = min(np.int64(z), bins - 1)
    return knots[b] + (z - b) * (knots[b + 1] - knots[b])


@nb.njit(inline="always")
def _threshold(key, lo, hi, f, cdf, use_cdf, space_lows, space_highs):
    """A continuous split's threshold in [lo, hi] of feature ``f``, as
    ``trees.choose_splits`` draws it (uniform, or uniform in the released cdf)."""
    u = _unit(_mix(key ^ u64(0x13198A2E03707344)))
    if not use_cdf:
        return lo + u * (hi - lo)
    bins = cdf.shape[1] - 1
    knots = cdf[f]
    base = space_lows[f]
    width = space_highs[f] - space_lows[f] if space_highs[f] > space_lows[f] else 1.0
    a = _forward(knots, bins, base, width, lo)
    q = a + u * (_forward(knots, bins, base, width, hi) - a)
    b = -1
    for j in range(bins + 1):
        if knots[j] <= q:
            b += 1
    b = min(max(b, 0), bins - 1)
    step = knots[b + 1] - knots[b]
    frac = min(max((q - knots[b]) / step, 0.0), 1.0)
    return min(max(base + (b + frac) * (width / bins), lo), hi)


@nb.njit(inline="always")
def _split(key, lows, highs, node, s, cum, weighted, cdf, use_cdf, space_lows, space_highs):
    """(feature, threshold) of an internal node, as ``trees.choose_splits`` draws them."""
    draw = _unit(_mix(key ^ u64(0x243F6A8885A308D3)))
    if weighted:
        target = draw * cum[s - 1]
        f = 0
        for j in range(s):
            if cum[j] <= target:
                f += 1
        f = min(f, s - 1)
    else:
        f = min(np.int64(draw * s), s - 1)
    t = _threshold(key, lows[node, f], highs[node, f], f, cdf, use_cdf, space_lows, space_highs)
    return f, t


@nb.njit(
    (
        nb.uint64[::1],  # key
        i64[::1],  # tree
        i64[::1],  # depth
        i64[::1],  # parent
        i64[::1],  # edge
        i64[::1],  # in_feature
        f64[::1],  # in_threshold
        f64[:, ::1],  # lows
        f64[:, ::1],  # highs
        i32[::1],  # feature
        f64[::1],  # threshold
        i64[::1],  # n_children
        i32[::1],  # first_child
        i64,  # roots
        i64,  # max_depth
        i64,  # levels
        nb.uint64,  # child salt 0
        nb.uint64,  # child salt 1
        f64[::1],  # cumulative feature weights (empty: uniform features)
        f64[:, ::1],  # split cdf (0 rows: uniform thresholds)
        f64[::1],  # space lows
        f64[::1],  # space highs
    ),
    nogil=True,
    cache=True,
)
def build_binary_levels(
    key,
    tree,
    depth,
    parent,
    edge,
    in_feature,
    in_threshold,
    lows,
    highs,
    feature,
    threshold,
    n_children,
    first_child,
    roots,
    max_depth,
    levels,
    salt0,
    salt1,
    cum,
    cdf,
    space_lows,
    space_highs,
):
    """Every node of the ``levels`` levels below the ``roots`` first nodes (their splits
    drawn already): down to ``max_depth`` when ``levels`` is ``max_depth``, else the
    last level's nodes keep their drawn splits and stay unbuilt (``first_child`` -2),
    as the level loop leaves them; returns the store's new size."""
    s = lows.shape[1]
    weighted = len(cum) > 0
    use_cdf = cdf.shape[0] > 0
    start, count, size = 0, roots, roots
    for level in range(levels):
        for p in range(start, start + count):
            first_child[p] = np.int32(size)
            f = feature[p]
            for c in range(2):
                v = size
                size += 1
                key[v] = _mix(key[p] ^ (salt1 if c else salt0))
                tree[v] = tree[p]
                depth[v] = level + 1
                parent[v] = p
                edge[v] = c
                in_feature[v] = f
                in_threshold[v] = threshold[p]
                for j in range(s):
                    lows[v, j] = lows[p, j]
                    highs[v, j] = highs[p, j]
                if c:
                    lows[v, f] = threshold[p]
                else:
                    highs[v, f] = threshold[p]
                if level + 1 >= max_depth:
                    feature[v] = -1
                    threshold[v] = np.nan
                    n_children[v] = 0
                    first_child[v] = -1
                else:
                    g, t = _split(
                        key[v],
                        lows,
                        highs,
                        v,
                        s,
                        cum,
                        weighted,
                        cdf,
                        use_cdf,
                        space_lows,
                        space_highs,
                    )
                    feature[v] = np.int32(g)
                    threshold[v] = t
                    n_children[v] = 2
                    first_child[v] = -2
        start += count
        count *= 2
    return size


@nb.njit(inline="always")
def _feature(key, used, v, s, r, weights, weighted, cum):
    """A node's split feature as ``trees.choose_features`` draws it: among the continuous
    features and the discrete ones its path has not used, uniformly or in proportion to
    the released weights (``cum``: scratch for their running sums)."""
    draw = _unit(_mix(key ^ u64(0x243F6A8885A308D3)))
    if weighted:
        total = 0.0
        for j in range(s + r):
            w = weights[j]
            if j >= s and used[v, j - s]:
                w = w * 0.0
            total = w if j == 0 else total + w
            cum[j] = total
        target = draw * cum[s + r - 1]
        f = 0
        for j in range(s + r):
            if cum[j] <= target:
                f += 1
        return min(f, s + r - 1)
    n_allowed = s
    for j in range(r):
        if not used[v, j]:
            n_allowed += 1
    pick = min(np.int64(draw * n_allowed), n_allowed - 1)
    if pick < s:
        return pick
    rank = pick - s
    for j in range(r):
        if not used[v, j]:
            if rank == 0:
                return s + j
            rank -= 1
    return s + r - 1  # not reached: pick < n_allowed


@nb.njit(
    (
        nb.uint64[::1],  # key
        i64[::1],  # tree
        i64[::1],  # depth
        i64[::1],  # parent
        i64[::1],  # edge
        i64[::1],  # in_feature
        f64[::1],  # in_threshold
        f64[:, ::1],  # lows
        f64[:, ::1],  # highs
        nb.boolean[:, ::1],  # used
        i32[::1],  # feature
        f64[::1],  # threshold
        i64[::1],  # n_children
        i32[::1],  # first_child
        i64,  # size
        i64[::1],  # ids to expand (unbuilt internal nodes, distinct)
        i64,  # budget
        i64,  # max_depth
        nb.uint64[::1],  # child salts, one per child index
        i64[::1],  # each discrete feature's value count
        f64[::1],  # feature weights (empty: uniform features)
        f64[:, ::1],  # split cdf (0 rows: uniform thresholds)
        f64[::1],  # space lows
        f64[::1],  # space highs
    ),
    nogil=True,
    cache=True,
)
def build_levels(
    key,
    tree,
    depth,
    parent,
    edge,
    in_feature,
    in_threshold,
    lows,
    highs,
    used,
    feature,
    threshold,
    n_children,
    first_child,
    size,
    ids,
    budget,
    max_depth,
    salts,
    n_values,
    weights,
    cdf,
    space_lows,
    space_highs,
):
    """Build every child of the unbuilt nodes ``ids``, then whole levels below them
    while the nodes built stay within ``budget``, as ``NodeStore.build``'s level loop
    does (each parent's children side by side, parents in the order given, level after
    level); the arrays must hold the nodes built. Returns the store's new size."""
    s = lows.shape[1]
    r = used.shape[1]
    weighted = len(weights) > 0
    use_cdf = cdf.shape[0] > 0
    cum = np.empty(s + r)
    current = ids.copy()
    built = 0
    while len(current):
        start = size
        for p in current:
            first_child[p] = np.int32(size)
            f = feature[p]
            for c in range(n_children[p]):
                v = size
                size += 1
                key[v] = _mix(key[p] ^ salts[c])
                tree[v] = tree[p]
                depth[v] = depth[p] + 1
                parent[v] = p
                edge[v] = c
                in_feature[v] = f
                in_threshold[v] = threshold[p]
                for j in range(s):
                    lows[v, j] = lows[p, j]
                    highs[v, j] = highs[p, j]
                for j in range(r):
                    used[v, j] = used[p, j]
                if f >= s:
                    used[v, f - s] = True
                elif c == 1:
                    lows[v, f] = threshold[p]
                else:
                    highs[v, f] = threshold[p]
                leaf = depth[v] >= max_depth
                if s == 0 and not leaf:
                    leaf = True
                    for j in range(r):
                        if not used[v, j]:
                            leaf = False
                            break
                if leaf:
                    feature[v] = -1
                    threshold[v] = np.nan
                    n_children[v] = 0
                    first_child[v] = -1
                    continue
                g = _feature(key[v], used, v, s, r, weights, weighted, cum)
                feature[v] = np.int32(g)
                if g < s:
                    threshold[v] = _threshold(
                        key[v], lows[v, g], highs[v, g], g, cdf, use_cdf, space_lows, space_highs
                    )
                    n_children[v] = 2
                else:
                    threshold[v] = np.nan
                    n_children[v] = n_values[g - s]
                first_child[v] = -2
        built += size - start
        inner = 0
        below = 0
        for v in range(start, size):
            if first_child[v] == -2:
                inner += 1
                below += n_children[v]
        current = np.empty(inner, dtype=np.int64)
        inner = 0
        for v in range(start, size):
            if first_child[v] == -2:
                current[inner] = v
                inner += 1
        if built + below > budget:
            break
    return size
