"""Models: the estimators and what they are made of.

One subpackage per model family, each with an ``estimator`` module that calls the others
(no part imports its estimator back): ``forest`` (the Fletcher–Islam forest and JPW),
``greedy`` (Friedman–Schuster, DPEA), ``boosting`` (DPBoost). The shared tree machinery is
``trees`` (random trees, routing, the depth rules); ``objective`` is the decision rule
every family applies. Above the families: ``files`` (the model files) and ``registry``
(the algorithm registry the CLI, the sweeps and the app read). A family imports the shared
machinery, never another family, ``files`` or ``registry``.

Imports only dpviz.privacy, dpviz.compiled and dpviz.tabular.
"""
