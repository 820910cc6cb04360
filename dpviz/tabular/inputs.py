"""Validation of what users hand the estimators: features, labels and the schema."""

from __future__ import annotations

import warnings
from numbers import Integral

import numpy as np
import pandas as pd
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d, validate_data

from dpviz.privacy.schema import (
    PrivacyLeakWarning,
    Schema,
    as_text,
    infer_numeric_schema,
    infer_schema,
)
from dpviz.tabular.encode import EncodedData, encode, encode_array
from dpviz.tabular.ranges import column_ranges


def check_whole_numbers(estimator, lowest: dict[str, int]) -> None:
    """Each named parameter must be a whole number at least its lowest value."""
    for name, low in lowest.items():
        value = getattr(estimator, name)
        if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
            raise ValueError(f"{name} must be a whole number ≥ {low}, got {value!r}")


def resolve_schema(schema, frame: pd.DataFrame, y: np.ndarray, ranges=None) -> Schema:
    """The estimator's ``schema`` parameter as a Schema; None infers it from the data
    with a :class:`PrivacyLeakWarning` (the guarantee is then void). ``ranges``: each
    column's (min, max) of a finite float array ``frame`` holds, when the caller has
    them (integer labels then skip the frame's pass: the same schema)."""
    if isinstance(schema, Schema):
        return schema
    if isinstance(schema, dict):
        return Schema.from_dict(schema)
    if isinstance(schema, str):
        return Schema.load(schema)
    if schema is not None:
        raise ValueError("schema must be a Schema, a dict, a path to a JSON file or None")
    y = np.asarray(y)
    if ranges is not None and y.dtype.kind in "iu":
        inferred = infer_numeric_schema(list(frame.columns), *ranges, y, "__label__")
    else:
        data = frame.copy()
        # Integer labels stay integers: their class texts are the same (as_text), and
        # the missing-label test and distinct values then run on numbers.
        data["__label__"] = y if y.dtype.kind in "iu" else y.astype(object)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            inferred = infer_schema(data, "__label__", numeric_is_continuous=True)
    warnings.warn(
        "no public schema was given, so the class list and feature domains were "
        "inferred from the training data. That reads the raw records without noise: "
        "this model is NOT differentially private. Pass schema=... for a guarantee.",
        PrivacyLeakWarning,
        stacklevel=4,
    )
    return inferred


def training_data(estimator, X, y) -> tuple[EncodedData, Schema, np.ndarray]:
    """Validate (X, y) scikit-learn style, resolve the schema and encode the records.

    Returns the encoded records, the schema and the class labels (:func:`class_labels`).
    """
    if isinstance(X, pd.DataFrame):
        estimator.feature_names_in_ = np.asarray(X.columns, dtype=object)
        frame = X.rename(columns=str)
        y = column_or_1d(np.asarray(y) if y is not None else y, warn=True)
        if len(y) != len(X):
            raise ValueError(f"X has {len(X)} rows but y has {len(y)} labels")
        if len(y) == 0:
            raise ValueError("cannot fit on 0 samples: the data has no rows")
    else:
        # scikit-learn's finiteness check of X is a pass over every value; the column
        # ranges that encoding needs anyway see NaN and ±inf too (then scikit-learn's
        # check runs, for its own error message).
        array, y = validate_data(estimator, X, y, dtype="numeric", ensure_all_finite=False)
        finite, ranges = _finite_ranges(array)
        if not finite:
            validate_data(estimator, X, y, dtype="numeric")  # raises: X is not finite
        y = np.asarray(y)
        frame = pd.DataFrame(array, columns=[f"x{i}" for i in range(array.shape[1])])
    if y.dtype != object and y.dtype.kind not in "iuUS":
        # Text labels are classes by construction, and so are integers (scikit-learn's
        # check finds them all "binary" or "multiclass", after sorting every label);
        # other numbers may be a regression target.
        check_classification_targets(y)
    array_ranges = None if isinstance(X, pd.DataFrame) else ranges
    schema = resolve_schema(estimator.schema, frame, y, array_ranges)
    if not isinstance(X, pd.DataFrame):
        if frame.shape[1] != len(schema.features):
            raise ValueError(
                f"X has {frame.shape[1]} features, but the schema lists {len(schema.features)}"
            )
        if not schema.discrete:
            encoded = encode_array(array, y, schema, training=True, ranges=ranges)
            classes = class_labels(schema, y, encoded.y)
            return _checked(encoded, schema), schema, classes
        frame.columns = schema.feature_names
    frame = frame.copy()
    frame[schema.label] = np.asarray(y, dtype=object)
    encoded = encode(frame, schema, training=True)
    return _checked(encoded, schema), schema, class_labels(schema, y)


def _finite_ranges(array: np.ndarray) -> tuple[bool, tuple | None]:
    """(whether every value is finite, each column's (min, max) or None): the ranges of
    a float64 array in one pass, which encoding then reuses."""
    if array.dtype == np.float64 and array.ndim == 2 and array.size:
        low, high = column_ranges(array)
        return bool(np.isfinite(low).all() and np.isfinite(high).all()), (low, high)
    if array.dtype.kind in "fc":
        return bool(np.isfinite(array).all()), None
    return True, None


def _checked(encoded: EncodedData, schema: Schema) -> EncodedData:
    if schema.inferred and np.unique(encoded.y).size < 2:
        raise ValueError("the training labels hold only one class; a classifier needs two")
    return encoded


def prediction_data(estimator, X) -> EncodedData:
    """Records to predict, encoded with the fitted schema (checks the feature count)."""
    if isinstance(X, pd.DataFrame):
        frame = X.rename(columns=str)
    else:
        array = validate_data(estimator, X, dtype="numeric", reset=False)
        if not estimator.schema_.discrete:
            return encode_array(array, None, estimator.schema_, training=False)
        frame = pd.DataFrame(array, columns=estimator.schema_.feature_names)
    return encode(frame, estimator.schema_, training=False)


def batch_data(estimator, X, y) -> EncodedData:
    """A new batch of labelled records, encoded with the fitted schema."""
    if isinstance(X, pd.DataFrame):
        frame = X.rename(columns=str).copy()
    else:
        array = validate_data(estimator, X, dtype="numeric", reset=False)
        frame = pd.DataFrame(array, columns=estimator.schema_.feature_names)
    frame[estimator.schema_.label] = np.asarray(y, dtype=object)
    return encode(frame, estimator.schema_, training=True)


def class_labels(schema: Schema, y: np.ndarray, codes: np.ndarray | None = None) -> np.ndarray:
    """``classes_`` of a fit, and so the values and dtype of ``predict``.

    A public schema decides them alone: its class texts (object dtype), whatever the
    labels hold, so which classes occur in the training data shows in neither the values
    nor the dtype (a model file and the evaluation engine give the same). An inferred
    schema was read from the labels themselves (such a model is NOT private): its
    classes keep the labels' type where they round-trip (:func:`class_array`), as
    scikit-learn's estimator API expects of integer labels."""
    if schema.inferred:
        return class_array(schema.classes, y, codes)
    return np.asarray(schema.classes, dtype=object)


def class_array(
    classes: tuple[str, ...], y: np.ndarray, codes: np.ndarray | None = None
) -> np.ndarray:
    """Class labels in the type of y where they round-trip (ints stay ints).

    ``codes``: each kept record's class index (the encoded labels): for integer ``y``
    they say which classes occur without a pass over ``y``'s values."""
    y = np.asarray(y)
    if codes is not None and y.dtype.kind in "iu" and len(classes):
        present = np.bincount(codes, minlength=len(classes)) > 0
        try:
            values = [int(c) for c in classes]
        except ValueError:
            values = None
        # A class named by an integer's text (as_text: "3", not "03") that occurs in y.
        if (
            values is not None
            and present.all()
            and all(str(v) == c for v, c in zip(values, classes, strict=True))
        ):
            return np.asarray(values, dtype=y.dtype)
    # Hash-based distinct values: sorting a million label strings costs more than a fit.
    values = pd.unique(pd.Series(y).dropna())
    by_text = {as_text(v): v for v in values}
    if all(c in by_text for c in classes):
        return np.asarray([by_text[c] for c in classes])
    return np.asarray(classes, dtype=object)
