"""Fixtures of the leaderboard tests: Debian's headless Chromium for the page tests."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator

import pytest

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


@pytest.fixture
async def chromium() -> AsyncIterator[object]:
    """Debian's headless Chromium through Playwright's async API (Playwright's download is never used)."""
    executable = shutil.which("chromium")
    if executable is None:  # a failure, not a skip: `make test` installs it (sandboxes/host-setup.sh)
        pytest.fail("Debian's chromium is not installed: run `bash sandboxes/host-setup.sh`")
    from playwright.async_api import async_playwright  # the [web]/[dev] extra, only for this test

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()
