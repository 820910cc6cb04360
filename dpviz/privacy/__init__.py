"""Privacy: everything the guarantee rests on, and nothing that trains a model.

Owns the secret noise source and the public randomness, the leaf mechanisms, the exact
and the empirical (whole-release) audits, the privacy ledger, the risk translations of ε,
and the schema with its public/inferred status. Imports nothing else of dpviz.
"""
