"""Evaluation: how well a private model does, measured honestly.

Owns the metrics and the majority baseline, cross-validation, ε sweeps and their
references, the papers' reproductions, the synthetic and demo datasets, and the teaching
computations. Imports only dpviz.privacy and dpviz.models.
"""
