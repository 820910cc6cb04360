"""The utility benchmark's parts (``bench/bench_utility.py`` is the command).

``data`` (the two groups of datasets), ``methods`` (dpviz, diffprivlib, DP-EBM and the
references behind one interface), ``run`` (folds, scores, one CSV row per fit),
``tables`` (markdown), ``checks`` (the issues' must-hold lines) and ``report`` (every group
and seed). Scores only: nothing here is released by dpviz.
"""
