"""Models: the estimators and what they are made of.

Owns the random decision trees, the Fletcher–Islam forest and JPW, the greedy trees
(Friedman–Schuster, DPEA), DPBoost, CSV reading and encoding, input validation, depth and
size rules, the algorithm registry and the model files. Imports only dpviz.privacy.
"""
