"""Where things are, whichever folder of tests/ a module lives in: the checkout and test data."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"  # files as released (old schemas), read by the upgrade tests
