"""The demo's report in a real browser (headless Chromium, the Debian package): it loads with no console error and
no network request, every section is there with content, the filter box filters, the header holds at any width,
the SASS diffs get their colours, and the screenshot is a page. And the browser helper itself: it leaves no
process and no profile behind.

Skipped only where no Chromium is installed (`.ci/run` installs it).
"""

from __future__ import annotations

import pytest

from chromium import Chromium, find_chromium, process_group  # tests/chromium.py
from tritonhook.page import SECTIONS
from tritonhook.store import Store

pytestmark = [pytest.mark.skipif(find_chromium() is None, reason="no Chromium (apt-get install chromium)"),
              pytest.mark.release_independent]  # the page in Chromium: the same under every Triton


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


def test_the_header_columns_line_up_with_the_rows(demo, browser):
    """A long table is a header table and tables of CHUNK_ROWS rows: their columns must fall on each other."""
    browser.open(demo.report)
    for table in ("#capture-table", "#effect-table"):
        heads, cells = browser.evaluate(f"""[
            Array.from(document.querySelectorAll('{table} thead th'), c => Math.round(c.getBoundingClientRect().left)),
            Array.from(document.querySelectorAll('{table} tbody tr:first-child td'),
                       c => Math.round(c.getBoundingClientRect().left))]""")
        assert len(heads) > 5 and heads == cells, table


@pytest.mark.parametrize("width", [600, 800, 1400])
def test_the_filter_box_hides_no_navigation_link_at_any_width(demo, browser, width):
    browser.open(demo.report)
    browser.call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=False)
    try:
        boxes = browser.evaluate("""Array.from(document.querySelectorAll('header nav a, #filter'), e => {
            const r = e.getBoundingClientRect();
            return [e.textContent || e.id, r.left, r.top, r.right, r.bottom]; })""")
    finally:
        browser.call("Emulation.clearDeviceMetricsOverride")
    assert len(boxes) == len(SECTIONS) + 1
    for index, (name, left, top, right, bottom) in enumerate(boxes):
        assert 0 <= left < right <= width and top < bottom, f"{name} not on screen at {width} px"
        for other, o_left, o_top, o_right, o_bottom in boxes[index + 1:]:
            overlap = left < o_right and o_left < right and top < o_bottom and o_top < bottom
            assert not overlap, f"{name} and {other} overlap at {width} px"


def test_a_sass_diff_gets_its_colours_when_opened(demo, browser):
    browser.open(demo.report)
    before, after, added, removed = browser.evaluate("""(async () => {
        const details = document.querySelector('details.sass'), pre = details.querySelector('pre');
        const before = pre.textContent;
        details.open = true;
        await new Promise(resolve => setTimeout(resolve, 100));  // the toggle event is queued
        return [before, pre.textContent, pre.querySelectorAll('span.diff-add').length,
                pre.querySelectorAll('span.diff-del').length];
    })()""")
    assert after.rstrip("\n") == before and added > 0 and removed > 0
    lines = before.split("\n")
    assert added == sum(line.startswith("+") and not line.startswith("+++") for line in lines)


def test_chromium_stopped_leaves_no_process_and_no_profile(demo):
    """Start and stop a few times, each time with the profile busy: once the block ends, none of Chromium's
    processes runs and its profile is gone (its children used to outlive it, writing there: "Directory not empty")."""
    for _ in range(5):
        with Chromium() as opened:
            opened.open(demo.report)
            opened.evaluate("localStorage.setItem('busy', 'x'.repeat(1 << 20)); 0")
            group, profile = opened.pgid, opened.profile
            assert len(process_group(group)) >= 3 and profile.is_dir()  # browser, zygote, renderer, ...
        assert process_group(group) == [] and not profile.exists()
