"""Headless Chromium for the page tests (Debian's /usr/bin/chromium via Playwright): the
browser fixture, a page opened from disk with every request, console error and dialog
recorded (``open_report``), and the check that it stayed clean (``assert_clean``); the
``browser`` fixture itself is in conftest.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


@dataclass
class Watched:
    """A page plus what it tried to do."""

    page: Any
    path: Path
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


def launch_chromium(playwright: Any) -> Any:
    """Debian's Chromium, headless (the ``browser`` fixture of conftest.py)."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: scripts/bootstrap.sh test installs Debian's chromium")
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)


def open_report(browser: Any, path: Path, width: int = 1440) -> Watched:
    """Open a report from disk with every non-file request recorded and aborted."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    watched = Watched(page=page, path=path)

    def route(route: Any) -> None:
        url = route.request.url
        watched.requests.append(url)
        if url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    def on_dialog(dialog: Any) -> None:
        watched.dialogs.append(dialog.message)
        dialog.dismiss()

    page.route("**/*", route)
    page.on("request", lambda request: watched.requests.append(request.url))
    page.on("console", lambda msg: watched.errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: watched.errors.append(str(exc)))
    page.on("dialog", on_dialog)
    page.goto(path.as_uri(), wait_until="load")
    return watched


def assert_clean(w: Watched) -> None:
    """No network, no console error, no dialog, no injected script ran."""
    outside = [u for u in w.requests if not u.startswith("file://")]
    assert outside == [], f"requests left the page: {outside}"
    assert w.errors == [], f"console errors: {w.errors}"
    assert w.dialogs == [], f"a dialog fired: {w.dialogs}"
    assert w.page.evaluate("() => window.__xss === undefined")
