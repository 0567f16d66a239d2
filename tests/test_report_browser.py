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


MERMAID = "12.3.0"  # the version whose parser checks the Markdown report's diagram (GitHub renders with Mermaid)


def _mermaid_bundle() -> Path:
    """Mermaid's own browser bundle, fetched once from the npm registry (`npm pack`: the package's tarball only)
    into a cache outside the repository."""
    import tarfile

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcptape-mermaid" / MERMAID
    script = cache / "mermaid.min.js"
    if script.exists():
        return script
    if not shutil.which("npm"):
        pytest.skip("npm is not installed: Mermaid's bundle cannot be fetched")
    cache.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["npm", "pack", f"mermaid@{MERMAID}", "--silent"], cwd=cache, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with tarfile.open(cache / done.stdout.strip().splitlines()[-1]) as tar:
        member = tar.extractfile("package/dist/mermaid.min.js")
        script.with_suffix(".part").write_bytes(member.read())
    script.with_suffix(".part").rename(script)
    return script


@pytest.mark.parametrize("tape", ["edited", "stdio"])
def test_the_markdown_reports_diagram_is_valid_mermaid(browser, real_tapes, tape):
    """Mermaid itself, in the browser, renders the diagram of the Markdown report without an error."""
    import re

    md = run_mcptape("report", real_tapes[tape]).stdout
    diagram = re.search(r"```mermaid\n(.*?)```", md, re.DOTALL).group(1)
    page = browser.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.set_content("<!DOCTYPE html><html><body></body></html>")
    page.add_script_tag(path=str(_mermaid_bundle()))
    svg = page.evaluate("""async (text) => {
        mermaid.initialize({startOnLoad: false, securityLevel: "strict"});
        const {svg} = await mermaid.render("diagram", text);
        return svg;
    }""", diagram)
    assert problems == [] and svg.startswith("<svg") and "Syntax error" not in svg
    assert "tools/call #3 add" in svg and "Client mcp 0.1.0" in svg
    if tape == "edited":
        assert "mcptape (edits)" in svg and "error #4 -32600 Session not found" in svg
    page.close()


CASSETTES = sorted((Path(__file__).resolve().parent.parent / "cassettes").glob("*.mcptape"))

# Each arrow label's drawn box (the browser's own text geometry, getBBox), and the x of every lifeline
GEOMETRY = """() => {
  const svg = document.querySelector('svg.sequence');
  const lifelines = [...svg.querySelectorAll('line[stroke-dasharray="4 4"]')].map(l => l.x1.baseVal.value);
  const labels = [...svg.querySelectorAll('text.label')].map(t => {
    const b = t.getBBox(); return {text: t.textContent, left: b.x, right: b.x + b.width, width: b.width};
  });
  const drawn = [...svg.querySelectorAll('line[data-at]')].map(l => l.getAttribute('data-at'));
  return {lifelines, labels, drawn};
}"""


@pytest.mark.parametrize("cassette", CASSETTES, ids=lambda p: p.stem)
def test_each_cassettes_report_leads_with_the_bug_and_draws_it_legibly(real_tapes, browser, tmp_path, cassette):
    # real_tapes is unused here, but asked first: its recording runs its own event loop, which it cannot do once
    # the (module-wide) browser has started Playwright's in this thread
    _leads_with_the_bug_and_draws_it_legibly(browser, tmp_path, cassette)


def test_an_edited_sessions_report_draws_mcptape_between_without_a_label_on_its_lifeline(real_tapes, browser,
                                                                                          tmp_path):
    """Three lifelines: the client's requests to the server cross mcptape's, and their labels must not."""
    _leads_with_the_bug_and_draws_it_legibly(browser, tmp_path, Path(real_tapes["edited"]), lifelines=3)


def _leads_with_the_bug_and_draws_it_legibly(browser, tmp_path, cassette: Path, lifelines: int = 2) -> None:
    import json

    page_file = tmp_path / f"{cassette.stem}.html"
    assert run_mcptape("report", str(cassette), "--format", "html", "-o", str(page_file)).returncode == 0
    data = json.loads(run_mcptape("report", str(cassette), "--format", "json").stdout)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(page_file.as_uri(), wait_until="load")

    headline = page.locator("p.headline")
    assert headline.is_visible()
    said = headline.inner_text()
    if data["findings"]:
        assert " is blamed (" in said and data["findings"][0]["rule"] in said or any(
            f["rule"] in said for f in data["findings"]), said
    else:
        assert said.startswith("Nothing went wrong"), said

    geometry = page.evaluate(GEOMETRY)
    assert geometry["labels"] and len(geometry["lifelines"]) == lifelines
    for label in geometry["labels"]:
        assert label["width"] > 0, label
        crossed = [x for x in geometry["lifelines"] if label["left"] - 1 <= x <= label["right"] + 1]
        assert crossed == [], f"the label {label['text']!r} ({label['left']:.0f}..{label['right']:.0f}) runs over " \
                              f"the lifeline at {crossed}"

    drawn = set(geometry["drawn"])
    for f in data["findings"]:  # every exchange a finding rests on has its arrow
        for e in f["excerpts"]:
            assert f"{cassette}#{e['record']}" in drawn, (f["rule"], e["record"], e["what"], sorted(drawn))

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"cassette-{cassette.stem}.png"), full_page=True)
    page.close()
