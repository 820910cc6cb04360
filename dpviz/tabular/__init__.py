"""Tabular: reading CSV files and encoding records for the models.

Public face: :func:`read_csv` (a CSV as text cells), :class:`EncodedData` (a frame
encoded under a schema by :func:`dpviz.tabular.encode.encode`; the name ``encode`` here is
the module, so the function is not re-exported), :func:`training_data` and
:func:`prediction_data` (an estimator's input checks), :func:`guess_label` and
:func:`suggest_drops` (column hints), :func:`check_outputs`, :func:`write_csv` and
:func:`write_text` (files the CLI writes). Modules: ``encode`` (reading and encoding),
``ranges`` (column ranges and a prediction's clipping, compiled when loaded),
``cell_formats`` (currency, percent and date cells), ``columns`` (label and column
hints), ``inputs`` (estimator input checks), ``outputs`` (safe output files).

Privacy: nothing here releases anything. Encoding reads the records under a public
schema; the hints (``columns``) read them too and are shown as NOT private diagnostics.

Imports only dpviz.privacy (the schema) and dpviz.compiled (a compiled column scan).
"""

from dpviz.tabular.columns import guess_label, suggest_drops
from dpviz.tabular.encode import EncodedData, read_csv
from dpviz.tabular.inputs import prediction_data, training_data
from dpviz.tabular.outputs import check_outputs, write_csv, write_text

__all__ = [
    "EncodedData",
    "check_outputs",
    "guess_label",
    "prediction_data",
    "read_csv",
    "suggest_drops",
    "training_data",
    "write_csv",
    "write_text",
]
