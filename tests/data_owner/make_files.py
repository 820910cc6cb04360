"""Write the synthetic data-owner CSVs (fixed seed; run from the repository root).

Each file copies the traits of a real export that needed edits outside the app
(issue 14): ID and name columns, R ``rownames``, ``;`` separators with decimal
commas, comma thousands groups, ``NA`` and empty cells, a label that is not last.
The values are random draws, not real records.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent
FIRST = ["Anna", "Ben", "Carl", "Dora", "Emil", "Fay", "Gus", "Hana", "Ivo", "Jil"]
LAST = ["Smith", "Berg", "Kelly", "Novak", "Rossi", "Dubois", "Olsen", "Meyer"]


def _names(rng: np.random.Generator, n: int) -> list[str]:
    first = rng.choice(FIRST, n)
    last = rng.choice(LAST, n)
    return [f"{b}, {a} ({i + 1})" for i, (a, b) in enumerate(zip(first, last))]


def _comma(values: np.ndarray, digits: int) -> list[str]:
    return [f"{v:.{digits}f}".replace(".", ",") for v in values]


def titanic_eu(rng: np.random.Generator, n: int = 600) -> pd.DataFrame:
    """`;`-separated, decimal commas: PassengerId, Name, Survived (not last), Age with
    empty cells, Ticket (mostly numbers), Fare with thousands dots, sparse Cabin."""
    sex = rng.choice(["male", "female"], n, p=[0.64, 0.36])
    pclass = rng.choice(["1st", "2nd", "3rd"], n, p=[0.25, 0.2, 0.55])
    age = np.round(rng.uniform(0.4, 80, n), 1)
    fare = np.round(np.where(pclass == "1st", rng.uniform(30, 1500, n), rng.uniform(4, 60, n)), 2)
    score = (sex == "female") * 2.2 + (pclass == "1st") * 1.0 - (pclass == "3rd") * 0.8
    score += (age < 12) * 1.0 - 1.0
    survived = np.where(rng.random(n) < 1 / (1 + np.exp(-score)), "yes", "no")
    ages = _comma(age, 1)
    for i in rng.choice(n, n // 5, replace=False):
        ages[i] = ""
    fares = [f"{v:,.2f}".replace(",", "_").replace(".", ",").replace("_", ".") for v in fare]
    # Kaggle-like tickets (mostly numbers, some with a prefix, a few shared) and cabins
    # (mostly empty, nearly all distinct): many rare categories.
    tickets = [
        (f"PC {t}" if t % 4 == 0 else f"A/5 {t}" if t % 7 == 0 else str(t))
        for t in rng.integers(1000, 400000, n) // np.where(rng.random(n) < 0.2, 1000, 1)
    ]
    cabins = np.where(
        pclass == "1st",
        [f"{d}{k}" for d, k in zip(rng.choice(list("ABCDE"), n), rng.integers(1, 130, n))],
        "",
    )
    return pd.DataFrame(
        {
            "PassengerId": np.arange(1, n + 1),
            "Name": _names(rng, n),
            "Survived": survived,
            "Pclass": pclass,
            "Sex": sex,
            "Age": ages,
            "Ticket": tickets,
            "Fare": fares,
            "Cabin": cabins,
            "Embarked": rng.choice(["S", "C", "Q"], n, p=[0.7, 0.2, 0.1]),
        }
    )


def titanic_r(rng: np.random.Generator, n: int = 500) -> pd.DataFrame:
    """R write.csv of carData::TitanicSurvival: rownames are names; NA for missing age;
    the label second, passengerClass last."""
    sex = rng.choice(["male", "female"], n, p=[0.64, 0.36])
    pclass = rng.choice(["1st", "2nd", "3rd"], n, p=[0.25, 0.2, 0.55])
    age = np.round(rng.uniform(0.2, 80, n), 4).astype(object)
    age[rng.choice(n, n // 5, replace=False)] = "NA"
    score = (sex == "female") * 2.2 + (pclass == "1st") * 1.0 - 1.0
    survived = np.where(rng.random(n) < 1 / (1 + np.exp(-score)), "yes", "no")
    return pd.DataFrame(
        {
            "rownames": _names(rng, n),
            "survived": survived,
            "sex": sex,
            "age": age,
            "passengerClass": pclass,
        }
    )


def penguins_r(rng: np.random.Generator, n: int = 344) -> pd.DataFrame:
    """R write.csv of palmerpenguins: rownames 1..N, species first, NA cells, year last."""
    species = rng.choice(["Adelie", "Chinstrap", "Gentoo"], n, p=[0.44, 0.2, 0.36])
    centre = {
        "Adelie": (38.8, 18.3, 190, 3700),
        "Chinstrap": (48.8, 18.4, 196, 3733),
        "Gentoo": (47.5, 15.0, 217, 5076),
    }
    cols = np.array([centre[s] for s in species]) + rng.normal(0, 1, (n, 4)) * [2.5, 1, 6, 400]
    island = np.where(
        species == "Gentoo",
        "Biscoe",
        np.where(species == "Chinstrap", "Dream", rng.choice(["Biscoe", "Dream", "Torgersen"], n)),
    )
    frame = pd.DataFrame(
        {
            "rownames": np.arange(1, n + 1),
            "species": species,
            "island": island,
            "bill_length_mm": np.round(cols[:, 0], 1).astype(object),
            "bill_depth_mm": np.round(cols[:, 1], 1).astype(object),
            "flipper_length_mm": np.round(cols[:, 2]).astype(int).astype(object),
            "body_mass_g": (np.round(cols[:, 3] / 25) * 25).astype(int).astype(object),
            "sex": rng.choice(["male", "female"], n).astype(object),
            "year": rng.choice([2007, 2008, 2009], n),
        }
    )
    for column in ("bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "sex"):
        frame.loc[rng.choice(n, 3, replace=False), column] = "NA"
    return frame


def islr_default(rng: np.random.Generator, n: int = 800) -> pd.DataFrame:
    """R write.csv of ISLR::Default: rownames, the label 'default' first, income last."""
    student = rng.choice(["No", "Yes"], n, p=[0.7, 0.3])
    balance = np.round(np.clip(rng.normal(835, 480, n), 0, None), 2)
    income = np.round(
        np.where(student == "Yes", rng.normal(17700, 4000, n), rng.normal(40000, 10000, n)), 2
    )
    default = np.where(rng.random(n) < 1 / (1 + np.exp(-(balance - 1800) / 200)), "Yes", "No")
    return pd.DataFrame(
        {
            "rownames": np.arange(1, n + 1),
            "default": default,
            "student": student,
            "balance": balance,
            "income": income,
        }
    )


def credit_default(rng: np.random.Generator, n: int = 700) -> pd.DataFrame:
    """Credit-card default table: ID, the 0/1 label in the middle, comma thousands
    groups in LIMIT_BAL (quoted), AGE last."""
    limit = rng.choice(np.arange(10, 800, 10) * 1000, n)
    pay = rng.choice([-1, 0, 1, 2, 3], n, p=[0.2, 0.5, 0.15, 0.1, 0.05])
    default = (rng.random(n) < 1 / (1 + np.exp(-(pay * 1.2 - 1.5)))).astype(int)
    return pd.DataFrame(
        {
            "ID": rng.permutation(np.arange(1, n + 1)),
            "LIMIT_BAL": [f"{v:,}" for v in limit],
            "SEX": rng.choice(["1", "2"], n),
            "default.payment.next.month": default,
            "PAY_0": pay,
            "EDUCATION": rng.choice(["1", "2", "3", "4"], n),
            "AGE": rng.integers(21, 75, n),
        }
    )


def main() -> None:
    rng = np.random.default_rng(14)
    titanic_eu(rng).to_csv(HERE / "titanic_eu.csv", sep=";", index=False)
    titanic_r(rng).to_csv(HERE / "titanic_r.csv", index=False)
    penguins_r(rng).to_csv(HERE / "penguins_r.csv", index=False)
    islr_default(rng).to_csv(HERE / "islr_default_r.csv", index=False)
    credit_default(rng).to_csv(HERE / "credit_default.csv", index=False)


if __name__ == "__main__":
    main()
