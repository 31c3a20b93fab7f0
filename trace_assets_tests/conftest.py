"""Fixtures shared by every test folder, and markers from the folder a test lives in."""

from pathlib import Path

import pytest

pytest_plugins = ["trace_assets_tests.support.s3_fixtures", "trace_assets_tests.support.hub_server"]

TESTS_DIR = Path(__file__).resolve().parent
FOLDER_MARKERS = {"dagster": pytest.mark.dagster, "services": pytest.mark.services}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`dagster/` tests get the `dagster` marker, `services/` tests `services`, so `-m` can pick."""
    for item in items:
        folder = Path(item.path).resolve().relative_to(TESTS_DIR).parts[0]
        if folder in FOLDER_MARKERS:
            item.add_marker(FOLDER_MARKERS[folder])


@pytest.fixture(autouse=True, scope="session")
def user_cache_in_the_session(tmp_path_factory: pytest.TempPathFactory):
    """What the code caches under the user's cache folder (the Hub's blob cache) goes to a folder of
    this test session, for its processes too, never into the ~/.cache of whoever runs the suite."""
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg_cache")))
    yield
    patch.undo()
