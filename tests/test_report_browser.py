"""The demo's report in a real browser (headless Chromium, the Debian package): it loads with no console error and
no network request, every section is there with content, the filter box filters, and the screenshot is a page.

Skipped only where no Chromium is installed (`.ci/run` installs it).
"""

from __future__ import annotations

import pytest

from tritonhook.page import SECTIONS
from tritonhook.page.browser import Chromium, find_chromium
from tritonhook.page.demo import run_demo
from tritonhook.store import Store

pytestmark = pytest.mark.skipif(find_chromium() is None, reason="no Chromium (apt-get install chromium)")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    return run_demo(out, samples=["add", "matmul_fp16", "tma_copy"], attention=False, progress=False)


@pytest.fixture(scope="module")
def browser():
    with Chromium() as opened:
        yield opened


def visible_rows(browser: Chromium, selector: str) -> int:
    return browser.evaluate(f"document.querySelectorAll('{selector} tbody tr:not(.hidden)').length")


def test_the_demo_report_loads_with_no_error_and_asks_the_network_for_nothing(demo, browser):
    page = browser.open(demo.report)
    assert page.errors == [] and page.requests == []
    for section_id, title in SECTIONS:
        text = browser.evaluate(f"(document.getElementById('{section_id}') || {{}}).textContent || ''")
        assert len(text) > len(title) + 20, f"section {section_id} missing or empty"
        assert browser.evaluate(f"!!document.querySelector('nav a[href=\"#{section_id}\"]')")
    assert browser.evaluate("document.querySelectorAll('#cutlass svg').length") == 1


def test_the_filter_keeps_the_rows_that_match_every_word(demo, browser):
    browser.open(demo.report)
    store = Store(demo.report.parent / "store", readonly=True)
    assert visible_rows(browser, "#capture-table") == len(store.captures())
    browser.type_into("#filter", "tma_copy sm_120a")
    wanted = [c for c in store.captures() if "tma_copy" in c.entry and c.arch == "sm_120a"]
    assert len(wanted) == 2  # plain and renamed
    assert visible_rows(browser, "#capture-table") == len(wanted)
    assert browser.evaluate("document.getElementById('shown-count').textContent") == str(len(wanted))
    assert visible_rows(browser, "#effect-table") == 1
    assert browser.evaluate("document.querySelectorAll('.kernel:not(.hidden)').length") == 1
    assert browser.open(demo.report).errors == []


def test_the_screenshot_is_a_rendered_page_not_a_blank(demo, browser, tmp_path):
    from PIL import Image

    browser.open(demo.report)
    shot = browser.screenshot(tmp_path / "report.png", full_page=True)
    with Image.open(shot) as image:
        width, height = image.size
        colours = image.convert("RGB").resize((200, 400)).getcolors(maxcolors=1 << 16)
    assert width >= 1000 and height >= 2000
    assert colours is not None and len(colours) > 50  # text, tables, bars: a blank page has one or two


def test_a_script_error_or_a_missing_section_is_caught(demo, browser, tmp_path):
    """The checks above can fail: a page with a broken script shows an error, one without a section lacks it."""
    broken = tmp_path / "broken.html"
    page = demo.report.read_text()
    broken.write_text(page.replace('document.getElementById("filter")', 'document.getElementById("filter").nope()'))
    assert any("nope" in error for error in browser.open(broken).errors)
    missing = tmp_path / "missing.html"
    missing.write_text(page.replace('<section id="memory">', '<section id="memory-gone">'))
    browser.open(missing)
    assert browser.evaluate("document.getElementById('memory')") is None
