"""Fixtures for the hosts scenarios: a Site per test, or a skip saying why there can be none."""

import json
import os
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.hosts.cluster import pg_bin
from tests.hosts.netns import namespaces_available


def _why_not() -> str | None:
    reason = namespaces_available()
    if reason is None and pg_bin() is None:
        reason = "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin"
    return reason


@pytest.fixture
def make_site() -> Iterator[Callable[..., Any]]:
    """Return Site(...) made for this test; every one is torn down (namespaces, cluster) after."""
    reason = _why_not()
    if reason is not None:
        pytest.skip(reason)
    from tests.hosts.site import Site

    made: list[Site] = []

    def make(*args: Any, **kwargs: Any) -> Site:
        site = Site(*args, **kwargs)
        made.append(site)
        return site

    try:
        yield make
    finally:
        for site in made:
            site.close()


@pytest.fixture
def needs_faketime() -> None:
    if shutil.which("faketime") is None:
        pytest.skip("faketime is not installed (apt-get install -y faketime)")


def note(scenario: str, facts: dict[str, Any]) -> None:
    """Print what a scenario injected and saw (and append it to $DQ_HOSTS_NOTES, for the issue's
    closing note)."""
    line = json.dumps({"scenario": scenario, **facts}, default=str)
    print(line)
    path = os.environ.get("DQ_HOSTS_NOTES")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
