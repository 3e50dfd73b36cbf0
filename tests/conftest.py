"""Hypothesis profiles, picked by INERT_HYPOTHESIS_PROFILE (dev | ci | thorough), and
the fixtures every test file may use."""

import os
import threading
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=40, deadline=None)
settings.register_profile(
    "ci", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.register_profile("thorough", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("INERT_HYPOTHESIS_PROFILE", "dev"))

# The journal fixtures (a PostgreSQL database per test, the back ends of the contract suite).
from journals import backend, postgres_admin, postgres_db, postgres_dsn  # noqa: E402,F401


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event that tools which must block (a tool that "hangs", a call held in its
    tool while the test looks) wait on; set at teardown, so no worker outlives the test."""
    event = threading.Event()
    yield event
    event.set()
