"""The label guess on frames laid out like typical public datasets (issue 27): the real
target wins over demographic attributes (gender, sex, race, age), IDs, an ``income``
feature and a last numeric column, whatever its position.

Every frame is generated here (fixed seeds; only the column layout and the number of
distinct values per column follow the public dataset), written as CSV text and read
back with :func:`read_csv`, and the guess is asked as the CLI's ``info`` and the Data
page ask it: with the suggested drops.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpviz.tabular.columns import guess_label, suggest_drops
from dpviz.tabular.encode import read_csv

N = 400


def cats(*values):
    return lambda rng: rng.choice(list(values), N)


def ints(low, high):
    return lambda rng: rng.integers(low, high + 1, N)


def cont(mean=0.0, sd=1.0):
    return lambda rng: rng.normal(mean, sd, N).round(3)


def ids(prefix=""):
    return lambda rng: [f"{prefix}{i:05d}" for i in rng.permutation(N)]


def names():
    first = ["Anna", "Ben", "Carla", "David", "Emma", "Farid", "Greta", "Hugo", "Ines", "Jan"]
    last = ["Smith", "Rossi", "Meyer", "Dubois", "Garcia", "Jansen", "Silva", "Novak"]
    return lambda rng: [f"{rng.choice(last)}, {rng.choice(first)}" for _ in range(N)]


def levels(n, prefix="v"):
    return cats(*(f"{prefix}{i}" for i in range(n)))


YES_NO = cats("yes", "no")
BINARY = ints(0, 1)
SEX = cats("male", "female")

# name -> (column layout, the label a data owner means)
LAYOUTS = {
    "adult: income last, sex and race before it": (
        [
            ("age", ints(17, 90)),
            ("workclass", levels(7)),
            ("fnlwgt", ints(12_000, 1_500_000)),
            ("education", levels(16)),
            ("education-num", ints(1, 16)),
            ("marital-status", levels(7)),
            ("occupation", levels(14)),
            ("relationship", levels(6)),
            ("race", levels(5)),
            ("sex", cats("Male", "Female")),
            ("capital-gain", ints(0, 99_999)),
            ("hours-per-week", ints(1, 99)),
            ("native-country", levels(41)),
            ("income", cats("<=50K", ">50K")),
        ],
        "income",
    ),
    "titanic (Kaggle): Survived second, Sex, Embarked last": (
        [
            ("PassengerId", lambda rng: np.arange(1, N + 1)),
            ("Survived", BINARY),
            ("Pclass", ints(1, 3)),
            ("Name", names()),
            ("Sex", SEX),
            ("Age", ints(1, 80)),
            ("SibSp", ints(0, 8)),
            ("Parch", ints(0, 6)),
            ("Ticket", ids("PC ")),
            ("Fare", cont(32, 20)),
            ("Embarked", cats("S", "C", "Q")),
        ],
        "Survived",
    ),
    "titanic (seaborn): survived first, a class feature, alone last": (
        [
            ("survived", BINARY),
            ("pclass", ints(1, 3)),
            ("sex", SEX),
            ("age", ints(1, 80)),
            ("fare", cont(32, 20)),
            ("class", cats("First", "Second", "Third")),
            ("who", cats("man", "woman", "child")),
            ("deck", cats("A", "B", "C", "D", "E", "F", "G")),
            ("alive", YES_NO),
            ("alone", cats("True", "False")),
        ],
        "survived",
    ),
    "german credit: status first, gender before a last credit_risk 1/2": (
        [
            ("status", levels(4, "A1")),
            ("duration", ints(4, 72)),
            ("credit_history", levels(5, "A3")),
            ("purpose", levels(10, "A4")),
            ("amount", ints(250, 18_424)),
            ("savings", levels(5, "A6")),
            ("installment_rate", ints(1, 4)),
            ("gender", SEX),
            ("personal_status_sex", levels(4, "A9")),
            ("age", ints(19, 75)),
            ("housing", levels(3, "A15")),
            ("telephone", cats("none", "yes")),
            ("foreign_worker", YES_NO),
            ("credit_risk", ints(1, 2)),  # UCI's numeric coding: 1 good, 2 bad
        ],
        "credit_risk",
    ),
    "bank marketing: a default feature, y last": (
        [
            ("age", ints(18, 95)),
            ("job", levels(12)),
            ("marital", cats("married", "single", "divorced")),
            ("education", cats("primary", "secondary", "tertiary", "unknown")),
            ("default", YES_NO),
            ("balance", ints(-8000, 100_000)),
            ("housing", YES_NO),
            ("loan", YES_NO),
            ("day", ints(1, 31)),
            ("month", levels(12, "m")),
            ("duration", ints(0, 4900)),
            ("poutcome", cats("failure", "other", "success", "unknown")),
            ("y", YES_NO),
        ],
        "y",
    ),
    "heart disease: sex second, target last (0/1)": (
        [
            ("age", ints(29, 77)),
            ("sex", BINARY),
            ("cp", ints(0, 3)),
            ("trestbps", ints(94, 200)),
            ("chol", ints(126, 564)),
            ("fbs", BINARY),
            ("thalach", ints(71, 202)),
            ("oldpeak", cont(1, 1)),
            ("ca", ints(0, 4)),
            ("thal", ints(0, 3)),
            ("target", BINARY),
        ],
        "target",
    ),
    "penguins: species first, sex last": (
        [
            ("species", cats("Adelie", "Chinstrap", "Gentoo")),
            ("island", cats("Biscoe", "Dream", "Torgersen")),
            ("bill_length_mm", cont(44, 5)),
            ("flipper_length_mm", ints(172, 231)),
            ("body_mass_g", ints(2700, 6300)),
            ("sex", cats("male", "female")),
        ],
        "species",
    ),
    "wine quality: quality last with 6 values": (
        [
            ("fixed acidity", cont(8, 1.7)),
            ("volatile acidity", cont(0.5, 0.2)),
            ("residual sugar", cont(2.5, 1.4)),
            ("pH", cont(3.3, 0.15)),
            ("alcohol", cont(10.4, 1.1)),
            ("quality", ints(3, 8)),
        ],
        "quality",
    ),
    "insurance: gender, a region, a last claim yes/no": (
        [
            ("age", ints(18, 64)),
            ("gender", SEX),
            ("bmi", cont(30, 6)),
            ("children", ints(0, 5)),
            ("smoker", YES_NO),
            ("region", cats("northeast", "northwest", "southeast", "southwest")),
            ("charges", cont(13_000, 12_000)),
            ("claim", YES_NO),
        ],
        "claim",
    ),
    "IBM HR: Attrition second, a last count with 18 values": (
        [
            ("Age", ints(18, 60)),
            ("Attrition", YES_NO),
            ("BusinessTravel", cats("Non-Travel", "Travel_Rarely", "Travel_Frequently")),
            ("Department", cats("Sales", "R&D", "HR")),
            ("Gender", SEX),
            ("MaritalStatus", cats("Single", "Married", "Divorced")),
            ("MonthlyIncome", ints(1009, 19_999)),
            ("OverTime", YES_NO),
            ("YearsWithCurrManager", ints(0, 17)),
        ],
        "Attrition",
    ),
    "breast cancer: id, diagnosis, then measurements": (
        [
            ("id", ids()),
            ("diagnosis", cats("M", "B")),
            ("radius_mean", cont(14, 3.5)),
            ("texture_mean", cont(19, 4.3)),
            ("area_worst", cont(880, 560)),
        ],
        "diagnosis",
    ),
    "telco churn: customerID, gender, SeniorCitizen, Churn last": (
        [
            ("customerID", ids("C-")),
            ("gender", cats("Male", "Female")),
            ("SeniorCitizen", BINARY),
            ("Partner", YES_NO),
            ("tenure", ints(0, 72)),
            ("Contract", cats("Month-to-month", "One year", "Two year")),
            ("MonthlyCharges", cont(65, 30)),
            ("Churn", cats("Yes", "No")),
        ],
        "Churn",
    ),
    "survey: an income bracket before response, a count last": (
        [
            ("respondent", ids("R")),
            ("gender", SEX),
            ("age_group", levels(5, "band")),
            ("income", levels(6, "bracket")),
            ("response", YES_NO),
            ("visits", ints(0, 200)),
        ],
        "response",
    ),
    "transactions: is_fraud before a state column": (
        [
            ("trans_num", ids("T")),
            ("amt", cont(70, 40)),
            ("category", levels(14)),
            ("is_fraud", BINARY),
            ("state", levels(50, "S")),
        ],
        "is_fraud",
    ),
    "French export: accents and upper case, Résultat before a city": (
        [
            ("Âge", ints(18, 90)),
            ("Sexe", cats("F", "M")),
            ("Région", levels(13, "R")),
            ("RÉSULTAT", cats("admis", "refusé")),
            ("Ville", levels(60, "V")),
        ],
        "RÉSULTAT",
    ),
    "only a demographic column has classes: it is the guess": (
        [("age", ints(18, 64)), ("bmi", cont(30, 6)), ("sex", SEX), ("charges", cont())],
        "sex",
    ),
}


def frame_of(layout, seed: int) -> pd.DataFrame:
    """The layout's columns (fixed seed), through CSV text as a real upload is read."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({name: make(rng) for name, make in layout})
    return read_csv(frame.to_csv(index=False).encode())


@pytest.mark.parametrize("case", LAYOUTS, ids=range(len(LAYOUTS)))
def test_the_label_a_data_owner_means_is_guessed(case):
    layout, expected = LAYOUTS[case]
    frame = frame_of(layout, seed=list(LAYOUTS).index(case))
    assert guess_label(frame, list(suggest_drops(frame))) == expected, case


def test_the_guess_reads_distinct_counts_not_values():
    """The guess depends on the names, the order and the number of distinct values
    only: another seed of the same layouts gives the same guesses."""
    for layout, expected in LAYOUTS.values():
        frame = frame_of(layout, seed=99)
        assert guess_label(frame, list(suggest_drops(frame))) == expected


def test_names_only_and_the_fallbacks():
    # names only (a schema file's columns): target names, then the last column
    assert guess_label(["gender", "income", "response", "visits"]) == "response"
    assert guess_label(["age", "Target_Class", "x"]) == "Target_Class"
    assert guess_label(["gender", "x", "sex"]) == "x"  # never a demographic while x qualifies
    assert guess_label(["id", "x", "year"]) == "x"  # nor an ID or a date
    # a column called "label" is meant as the label, even with one class or when dropped
    one_class = pd.DataFrame({"x": np.arange(40.0), "Label": ["a"] * 40})
    assert guess_label(one_class, ["Label"]) == "Label"
    # nothing has 2..20 values that repeat: the last kept column
    numbers = pd.DataFrame({"a": np.arange(30.0), "b": np.arange(30.0) * 2, "c": ["t"] * 30})
    assert guess_label(numbers, ["c"]) == "b"
    # 20 distinct values in 20 rows are not classes; a text column with repeats is
    few = pd.DataFrame({"colour": ["r", "g"] * 10, "size": np.arange(20.0)})
    assert guess_label(few) == "colour"
