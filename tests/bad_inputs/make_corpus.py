"""Write the bad-input corpus next to this script: ``python tests/bad_inputs/make_corpus.py``.

Every file is tiny (well under 20 KB) and deterministic; ``tests/test_bad_inputs.py``
feeds each one to the CLI and checks the error message. Rerun this script after
changing a case; it overwrites the files it owns and touches nothing else.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

# A small valid dataset: one continuous feature, one discrete feature, two classes
# with at least 4 rows each (enough for ``evaluate --folds 2``).
HEADER = "x,colour,label"
ROWS = [
    ("0.5", "red", "yes"),
    ("1.25", "blue", "no"),
    ("2.0", "red", "yes"),
    ("3.75", "green", "no"),
    ("4.5", "blue", "yes"),
    ("5.0", "green", "no"),
    ("6.25", "red", "yes"),
    ("7.5", "blue", "no"),
    ("8.0", "green", "yes"),
    ("9.75", "red", "no"),
    ("10.5", "blue", "yes"),
    ("11.0", "green", "no"),
]


def csv_text(rows, header: str = HEADER, sep: str = ",", newline: str = "\n") -> str:
    lines = [header.replace(",", sep)] + [sep.join(r) for r in rows]
    return newline.join(lines) + newline


SCHEMA = {
    "label": "label",
    "classes": ["no", "yes"],
    "features": [
        {"name": "x", "type": "continuous", "min": 0.0, "max": 12.0},
        {"name": "colour", "type": "discrete", "values": ["blue", "green", "red"]},
    ],
}

# A minimal valid model: one continuous feature x in [0, 1], one tree with a root
# split at 0.5 and two leaves releasing class 0 ("a") and class 1 ("b").
MODEL = {
    "format": "dpviz-forest",
    "version": 1,
    "dpviz_version": "0.1.0",
    "schema": {
        "label": "label",
        "classes": ["a", "b"],
        "features": [{"name": "x", "type": "continuous", "min": 0.0, "max": 1.0}],
    },
    "classes": ["a", "b"],
    "feature_order": ["x"],
    "algorithm": "fletcher_islam",
    "mechanism": "permute_flip",
    "releases": "label",
    "epsilon": 1.0,
    "n_estimators": 1,
    "depth": 1,
    "depth_rule": "1",
    "data_split": "disjoint",
    "noise": "secret",
    "privacy": {"epsilon_total": 1.0, "private": True, "summary": "hand-written test model"},
    "trees": [
        {
            "feature": [0, -1, -1],
            "threshold": [0.5, None, None],
            "first_child": [1, -1, -1],
            "output": [None, 0, 1],
        }
    ],
}


# A count-releasing model (what `update` adds to): laplace_counts on shared data.
COUNTS_MODEL = {
    **MODEL,
    "algorithm": "jpw",
    "mechanism": "laplace_counts",
    "releases": "counts",
    "data_split": "shared",
    "trees": [{**MODEL["trees"][0], "output": [None, [3, 1], [0, 2]]}],
}


def chain_tree(levels: int) -> dict:
    """One tree whose inner nodes form a chain: node 2j splits into a leaf (2j + 1) and
    the next inner node (2j + 2), ``levels`` deep."""
    n = 2 * levels + 1
    inner = [i % 2 == 0 and i < n - 1 for i in range(n)]
    return {
        "feature": [0 if a else -1 for a in inner],
        "threshold": [0.5 if a else None for a in inner],
        "first_child": [i + 1 if a else -1 for i, a in enumerate(inner)],
        "output": [None if a else 0 for a in inner],
    }


def model_with(**changes) -> dict:
    model = json.loads(json.dumps(MODEL))
    tree_changes = changes.pop("tree", {})
    model.update(changes)
    model["trees"][0].update(tree_changes)
    return model


def dumps(obj) -> str:
    return json.dumps(obj, indent=2) + "\n"


# A published key, so that the file below is signed "by another installation" and the
# corpus stays deterministic (dpviz.privacy.signing: HMAC-SHA256 of the canonical JSON).
OTHER_KEY = bytes(range(32))


def signed_elsewhere(model: dict) -> dict:
    canonical = json.dumps(model, sort_keys=True, separators=(",", ":")).encode("ascii")
    return {
        **model,
        "signature": {
            "algorithm": "HMAC-SHA256",
            "key_id": hashlib.sha256(b"dpviz signing key id|" + OTHER_KEY).hexdigest()[:16],
            "value": hmac.new(OTHER_KEY, canonical, hashlib.sha256).hexdigest(),
        },
    }


def corpus() -> dict[str, bytes]:
    """File name -> exact bytes of every file in the corpus."""
    files: dict[str, str | bytes] = {}

    # --- files that must work (controls) ----------------------------------------------
    files["valid.csv"] = csv_text(ROWS)
    files["valid.schema.json"] = dumps(SCHEMA)
    files["semicolon.csv"] = csv_text(ROWS, sep=";")
    files["tab.csv"] = csv_text(ROWS, sep="\t")
    files["bom_crlf.csv"] = "\ufeff" + csv_text(ROWS, newline="\r\n")
    files["model_valid.json"] = dumps(MODEL)
    files["predict_input.csv"] = "x\n0.1\n0.9\n"

    # --- bad CSV files ----------------------------------------------------------------
    files["empty.csv"] = b""
    files["whitespace.csv"] = "   \n\t\n  \r\n\n"
    files["header_only.csv"] = HEADER + "\n"
    files["one_class.csv"] = csv_text([(x, c, "yes") for x, c, _ in ROWS])
    # 'about 2' (text, not a missing-value token such as NA) makes inference call x
    # discrete; the schema below declares it continuous.
    text_rows = list(ROWS)
    text_rows[2] = ("about 2", "red", "yes")
    files["text_in_continuous.csv"] = csv_text(text_rows)
    files["text_in_continuous.schema.json"] = dumps(SCHEMA)
    # 'café' written in latin-1: the é is the single byte 0xE9, invalid in UTF-8.
    latin_rows = list(ROWS)
    latin_rows[3] = ("3.75", "café", "no")
    files["latin1.csv"] = csv_text(latin_rows).encode("latin-1")
    files["many_labels.csv"] = csv_text(
        [(str(i % 7), "red" if i % 2 else "blue", f"L{i}") for i in range(1000)]
    )
    # PNG signature and the start of an IHDR chunk (holds NUL bytes).
    files["binary.png"] = (
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x02"
        b"\x00\x00\x00\x90\x91h6\x00\x00\x00\x00IEND\xaeB`\x82"
    )
    # gzip header (magic, deflate, no flags, mtime 0, OS unix) and some deflate bytes.
    files["binary.csv.gz"] = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + bytes(range(256))
    # No header row: the first line is data (iris-like rows, text label last).
    files["no_header.csv"] = (
        "5.1,3.5,1.4,0.2,Iris-setosa\n"
        "4.9,3.0,1.4,0.2,Iris-setosa\n"
        "7.0,3.2,4.7,1.4,Iris-versicolor\n"
        "6.4,3.2,4.5,1.5,Iris-versicolor\n"
    )
    # Words separated by spaces: no delimiter is found, so there is one single column.
    files["one_column.txt"] = (
        "the quick brown fox\njumps over the lazy dog\nand runs far away\nfrom the hunter\n"
    )
    ragged = csv_text(ROWS).splitlines(keepends=True)
    ragged[4] = "3.75,green,no,extra,fields\n"
    files["ragged.csv"] = "".join(ragged)
    inf_rows = list(ROWS)
    inf_rows[1] = ("inf", "blue", "no")
    files["infinite_value.csv"] = csv_text(inf_rows)
    files["duplicate_header.csv"] = csv_text(ROWS, header="x,x,label")
    files["no_labels.csv"] = csv_text([(x, c, "") for x, c, _ in ROWS])

    # --- bad model files --------------------------------------------------------------
    valid_model = dumps(MODEL)
    files["model_truncated.json"] = valid_model[: len(valid_model) // 2]
    files["model_not_dpviz.json"] = dumps({"name": "some-package", "version": "1.0.0"})
    files["model_wrong_version.json"] = dumps(model_with(version=99))
    files["model_child_outside.json"] = dumps(model_with(tree={"first_child": [7, -1, -1]}))
    files["model_leaf_out_of_range.json"] = dumps(model_with(tree={"output": [None, 0, 5]}))
    files["model_huge_int.json"] = dumps(model_with(tree={"first_child": [10**30, -1, -1]}))
    files["model_classes_not_list.json"] = dumps(model_with(classes="ab"))
    files["model_bad_counts.json"] = dumps(
        model_with(
            mechanism="laplace_counts",
            releases="counts",
            tree={"output": [None, ["a", "b"], [0.0, 1.0]]},
        )
    )
    files["model_latin1.json"] = valid_model.replace("test model", "modèle").encode("latin-1")

    # --- issue 17: nesting, BOM, edited privacy claims, bounds, update inputs --------
    files["model_deep_nesting.json"] = (
        '{"format": "dpviz-forest", "x": ' + "[" * 5000 + "]" * 5000 + "}"
    )
    files["schema_deep_nesting.json"] = (
        '{"label": "label", "classes": ' + "[" * 5000 + "]" * 5000 + "}"
    )
    files["schema_bom.json"] = "\ufeff" + dumps(SCHEMA)
    files["model_bom.json"] = "\ufeff" + dumps(MODEL)
    files["model_float_version.json"] = dumps(model_with(version=1.0))
    # smooth_em has no privacy proof; the file still claims ε = 1.
    files["model_claims_private.json"] = dumps(model_with(mechanism="smooth_em"))
    files["model_claims_smaller_epsilon.json"] = dumps(
        model_with(privacy={"epsilon_total": 0.1, "private": True, "summary": "0.1-DP"})
    )
    files["model_claims_inferred_private.json"] = dumps(model_with(schema_inferred=True))
    files["model_trees_1e9.json"] = dumps(model_with(n_estimators=10**9))
    files["model_depth_1e9.json"] = dumps(model_with(depth=10**9))
    files["model_chain_deeper_than_claimed.json"] = dumps(
        {**model_with(depth=2), "trees": [chain_tree(3)]}
    )
    two_parents = {
        "feature": [0, 0, -1, -1],
        "threshold": [0.5, 0.25, None, None],
        "first_child": [1, 2, -1, -1],
        "output": [None, None, 0, 1],
    }
    files["model_two_parents.json"] = dumps({**model_with(depth=2), "trees": [two_parents]})
    # Model files whose parameters used to crash `update`.
    files["model_counts_valid.json"] = dumps(COUNTS_MODEL)
    files["update_batch.csv"] = "x,label\n0.1,a\n0.2,a\n0.7,b\n0.9,b\n"
    files["update_batch_no_label.csv"] = "x,other\n0.1,a\n0.9,b\n"
    files["model_counts_epsilon_zero.json"] = dumps({**COUNTS_MODEL, "epsilon": 0})
    files["model_counts_epsilon_text.json"] = dumps({**COUNTS_MODEL, "epsilon": "1"})
    files["model_counts_no_epsilon.json"] = dumps(
        {k: v for k, v in COUNTS_MODEL.items() if k != "epsilon"}
    )
    files["model_counts_bad_tree_epsilon.json"] = dumps({**COUNTS_MODEL, "tree_epsilon": 50.0})
    files["model_counts_inconsistent_tree_epsilon.json"] = dumps(
        {**COUNTS_MODEL, "tree_epsilon": 0.5}
    )
    # Class names a spreadsheet would run as formulas.
    formula_schema = {**MODEL["schema"], "classes": ['=HYPERLINK("http://x")', "@SUM(1)"]}
    files["model_formula_classes.json"] = dumps(
        {**model_with(classes=formula_schema["classes"]), "schema": formula_schema}
    )
    files["nan_labels.csv"] = csv_text(
        [
            (x, c, "NaN" if i % 4 == 0 else ("" if i % 4 == 1 else lab))
            for i, (x, c, lab) in enumerate(ROWS)
        ]
        + [(x, c, lab) for x, c, lab in ROWS]
    )

    # --- issue 26: privacy claims this installation cannot verify (they still predict) --
    files["model_signed_elsewhere.json"] = dumps(signed_elsewhere(COUNTS_MODEL))
    # Saved by dpviz from an unverified file: marked, unsigned, and an update keeps it so.
    files["model_counts_marked_unverified.json"] = dumps({**COUNTS_MODEL, "claim": "not verified"})

    # --- bad schema files -------------------------------------------------------------
    no_classes = {k: v for k, v in SCHEMA.items() if k != "classes"}
    files["schema_missing_classes.json"] = dumps(no_classes)
    min_max = json.loads(json.dumps(SCHEMA))
    min_max["features"][0].update({"min": 12.0, "max": 0.0})
    files["schema_min_above_max.json"] = dumps(min_max)
    no_values = json.loads(json.dumps(SCHEMA))
    del no_values["features"][1]["values"]
    files["schema_discrete_no_values.json"] = dumps(no_values)
    files["schema_truncated.json"] = dumps(SCHEMA)[:40]
    bad_type = json.loads(json.dumps(SCHEMA))
    bad_type["features"][1] = {"name": "colour", "type": "category", "values": 3}
    files["schema_bad_type.json"] = dumps(bad_type)
    # A free-text column with more distinct values than a discrete feature may have
    # (issue 14): the app and `info` suggest dropping it; kept, it is an error.
    rows = [(f"c{i % 1010}", f"{i % 97 / 10:g}", "ab"[i % 2]) for i in range(1050)]
    files["free_text_column.csv"] = "comment,x,label\n" + "".join(",".join(r) + "\n" for r in rows)

    return {
        name: data.encode("utf-8") if isinstance(data, str) else data
        for name, data in files.items()
    }


def main() -> None:
    for name, data in corpus().items():
        assert len(data) < 20_000, f"{name} is {len(data)} bytes; keep corpus files small"
        (HERE / name).write_bytes(data)
    print(f"wrote {len(corpus())} files to {HERE}")


if __name__ == "__main__":
    main()
