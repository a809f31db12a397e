"""Shared test set-up: the data mirror and small helpers."""

import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"

if "EXPLAINOPT_DATA" not in os.environ and SHARED_DATA.is_dir():
    os.environ["EXPLAINOPT_DATA"] = str(SHARED_DATA)


@pytest.fixture
def rng():
    return np.random.default_rng(0)
