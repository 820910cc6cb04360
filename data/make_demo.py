"""Write data/demo.csv and data/demo.schema.json (deterministic: run it again, same bytes).

    python data/make_demo.py

SynthA (Fletcher & Islam 2017), 2,000 rows, seed 0, values rounded to 4 decimals. The
schema comes from the generator, so it is public: no person's record shaped it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpviz.evaluation.demos import DEMO_CSV, DEMO_SCHEMA, demo_csv_records


def main() -> None:
    frame, schema = demo_csv_records()
    frame.to_csv(DEMO_CSV, index=False, lineterminator="\n")
    DEMO_SCHEMA.write_text(schema.to_json() + "\n", encoding="utf-8")
    print(f"wrote {DEMO_CSV} ({DEMO_CSV.stat().st_size:,} bytes) and {DEMO_SCHEMA}")


if __name__ == "__main__":
    main()
