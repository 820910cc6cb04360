"""Model files: the released form of every fitted model, written and read back.

Public face: :func:`release` (a fitted model's released form), :func:`load_model` and
:func:`model_from_json` (any dpviz model file, validated), the released models
(:class:`Released`, :class:`ReleasedForest`, :class:`ReleasedTree`, :class:`ReleasedBoost`)
and :func:`check_public_schema`.

Modules: ``load`` (release and read any file; greedy trees and DPBoost), ``forest`` (the
released forest), ``forest_nodes`` (its trees as flat arrays), ``forest_update`` (adding a
batch to a count forest), ``format`` (the container every file shares), ``claims`` (what a
file may claim about its privacy), ``manifest`` (what every field of a file is, and why it
may be there).

Privacy: a file holds only public inputs, booked releases and post-processing of them
(``manifest``); a schema inferred from the data is refused unless declared public.

Imports dpviz.privacy, dpviz.tabular, the model families and the shared tree machinery:
the files sit above the families, which never import them.
"""

from dpviz.models.files.load import (
    Released,
    ReleasedBoost,
    ReleasedForest,
    ReleasedTree,
    check_public_schema,
    load_model,
    model_from_json,
    release,
)

__all__ = [
    "Released",
    "ReleasedBoost",
    "ReleasedForest",
    "ReleasedTree",
    "check_public_schema",
    "load_model",
    "model_from_json",
    "release",
]
