"""Shared test settings: where ../shared lives, and deterministic hypothesis runs."""

import os
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CMLM_SHARED", REPO.parent / "shared"))

# derandomize: the same examples on every run, so CI results are reproducible.
settings.register_profile("repo", deadline=None, derandomize=True, max_examples=60)
settings.load_profile("repo")


@pytest.fixture
def shared_data() -> Path:
    path = SHARED / "data"
    if not path.is_dir():
        pytest.skip(f"{path} is absent: tests on the shared real data need ../shared beside the checkout "
                    "(or CMLM_SHARED pointing at it)")
    return path
