"""The HTML report in a real headless browser: Debian's Chromium (installed here when missing and this is a Debian
machine where we are root), driven by Playwright pointed at that executable (Playwright's own browser builds are
never downloaded). The page must load with no console error and no request beyond itself, and draw its diagram.
A screenshot is kept under tests/artifacts/ (ignored by git) for a person to look at."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import run_mcptape

ARTIFACTS = Path(__file__).parent / "artifacts"


def _chromium() -> str:
    """The path of Debian's Chromium, installing it once with apt when it is missing; a clear skip where it cannot
    be had."""
    for name in ("chromium", "chromium-browser"):
        if found := shutil.which(name):
            return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("chromium is not installed and cannot be installed here (needs root and apt-get)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"]
    done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0:  # the package lists may be missing or stale on a fresh machine
        subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env, timeout=600)
        done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0 or not shutil.which("chromium"):
        pytest.skip(f"apt-get could not install chromium: {done.stderr.strip().splitlines()[-1:]}")
    return shutil.which("chromium")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    executable = _chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.mark.parametrize("tape", ["edited", "stateless", "stdio"])
def test_the_html_report_in_a_real_browser(browser, real_tapes, tmp_path, tape):
    page_file = tmp_path / f"{tape}.html"
    result = run_mcptape("report", real_tapes[tape], "--format", "html", "-o", str(page_file))
    assert result.returncode == 0, result.stderr
    url = page_file.as_uri()
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    problems: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: requests.append(r.url))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.goto(url, wait_until="load")
    page.wait_for_load_state("networkidle")

    assert problems == [] and requests == [url]  # the page itself, nothing else
    diagram = page.locator("svg.sequence")
    assert diagram.count() == 1
    box = diagram.bounding_box()
    assert box and box["width"] > 500 and box["height"] > 200
    arrows = page.locator("svg.sequence line[marker-end]")
    assert arrows.count() >= 8  # four calls or more, each asked and answered
    label = page.locator("svg.sequence text", has_text="tools/call").first
    assert label.is_visible() and label.bounding_box()["width"] > 40  # drawn text, with a font the machine has
    if tape == "edited":
        details = page.locator("details").first
        assert not details.locator("pre").is_visible()  # messages start folded
        details.locator("summary").click()
        assert details.locator("pre").is_visible() and "Session not found" in details.locator("pre").inner_text()

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"report-{tape}.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}")
    assert shot.stat().st_size > 10_000
    page.close()
