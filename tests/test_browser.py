"""The built book as a reader meets it: a real browser (headless Chromium), no network.

Every chapter page loads with the network blocked; its equations are typeset (MathJax served from the
book's _static, no raw ``\\(`` left in the visible text); its figures are present and decoded; an
exercise's solution is hidden until its button is clicked; and an interactive figure responds to its
slider. Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them when missing).

The pages are the smoke-scale build of the tests; ``EXPLAINOPT_HTML=_build/html pytest -m book
tests/test_browser.py`` reads another build instead, e.g. the book scale's after ``make book``.
"""

import os
import shutil
import time
from pathlib import Path

import pytest

from explainopt import book

pytestmark = pytest.mark.book
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
CHAPTERS = [nb.stem for nb in book.chapter_notebooks() if nb.stem[0].isdigit()]
#: The pages a reader reads (under book/ in the built HTML): every notebook's (chapters and appendices), the
#: verdicts, the introduction and the teaching guide. The API reference is left out: its docstring examples
#: scroll sideways, as code in an API reference does.
PAGES = [f"chapters/{nb.stem}" for nb in book.chapter_notebooks()] + ["chapters/status", "intro", "teaching"]


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and DRIVER):
        pytest.skip("chromium and chromedriver are not installed (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,2000", "--host-resolver-rules=MAP * ~NOTFOUND"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["http://*", "https://*"]})
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def built_html(request):
    """The HTML folder of the build under test: ``EXPLAINOPT_HTML`` when set, else the smoke-scale build."""
    given = os.environ.get("EXPLAINOPT_HTML")
    if not given:
        return request.getfixturevalue("smoke_html")
    html = Path(given).resolve()
    assert (html / "book" / "chapters").is_dir(), f"EXPLAINOPT_HTML={given} holds no built book"
    return html


def _open(browser, page, *, settle: float = 1.0):
    browser.get(page.as_uri())
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # MathJax typesets asynchronously
        if browser.execute_script("return document.readyState") == "complete" and browser.execute_script(
                "return !window.MathJax || !MathJax.startup || MathJax.startup.promise === undefined "
                "|| document.querySelectorAll('mjx-container').length > 0"):
            break
        time.sleep(0.2)
    time.sleep(settle)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_a_chapter_page_renders_its_equations_and_figures_offline(browser, built_html, chapter):
    _open(browser, built_html / "book" / "chapters" / f"{chapter}.html")
    assert browser.title and "404" not in browser.title
    text = browser.find_element("tag name", "body").text
    assert "\\(" not in text and "\\[" not in text and "$$" not in text, "raw LaTeX left on the page"
    assert browser.execute_script("return document.querySelectorAll('mjx-container').length") > 0
    images = browser.execute_script(
        "return Array.from(document.images).filter(i => i.closest('.cell_output'))"
        ".map(i => i.complete && i.naturalWidth > 0)")
    assert images and all(images), "a figure is missing or failed to load"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_an_exercise_solution_opens_on_click(browser, built_html, chapter):
    _open(browser, built_html / "book" / "chapters" / f"{chapter}.html", settle=0.5)
    exercises = browser.find_elements("css selector", ".exercise")
    assert len(exercises) >= 5, f"{chapter} has {len(exercises)} exercises"
    solution = browser.find_elements("css selector", ".solution.dropdown")[0]
    assert "toggle-hidden" in solution.get_attribute("class"), "solutions are hidden by default"
    button = solution.find_element("css selector", "button.toggle-button")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
    button.click()
    time.sleep(0.5)
    assert "toggle-hidden" not in solution.get_attribute("class")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_an_interactive_figure_responds_to_its_slider(browser, built_html, chapter):
    from selenium.webdriver.common.action_chains import ActionChains

    _open(browser, built_html / "book" / "chapters" / f"{chapter}.html", settle=1.5)
    figures = browser.find_elements("css selector", ".js-plotly-plot")
    assert figures, f"{chapter} has no interactive figure"
    figure = next(f for f in figures if f.find_elements("css selector", ".slider-rail-touch-rect"))
    before = browser.execute_script("return JSON.stringify(arguments[0].data)", figure)
    rail = figure.find_element("css selector", ".slider-rail-touch-rect")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", figure)
    width = rail.size["width"]
    ActionChains(browser).move_to_element_with_offset(rail, int(width * 0.4), 0).click().perform()
    time.sleep(0.8)
    after = browser.execute_script("return JSON.stringify(arguments[0].data)", figure)
    assert after != before, "the figure did not change when its slider moved"


def test_no_page_asks_for_anything_on_the_network(built_html):
    for page in (built_html / "book" / "chapters").glob("*.html"):
        html = page.read_text()
        assert 'src="http' not in html and "cdn.jsdelivr" not in html, f"{page.name} loads a remote script"


# --------------------------------------------------------------------------- the reader's view

#: What the reader's view may not show: a raw pandas Series, a bare tuple printed by a cell.
RAW_REPR = r"(\bdtype: \w+|\bName: .*, dtype|^\(\s*-?[\d.]+(\s*,\s*-?[\d.]+)*\s*,?\s*\)$)"

READERS_VIEW = """
const article = document.querySelector('.bd-article');
const style = getComputedStyle(article);
const box = article.getBoundingClientRect();
const left = box.left + parseFloat(style.paddingLeft), right = box.right - parseFloat(style.paddingRight);
const shown = el => el.offsetParent !== null && el.getClientRects().length > 0;
const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    ' "' + (el.textContent || el.getAttribute('alt') || '').trim().slice(0, 60) + '"';
const cut = Array.from(document.querySelectorAll('table.verdicts, .verdict-summary'))
    .filter(t => t.textContent.includes('…')).map(name);
const raw = Array.from(article.querySelectorAll('.cell_output pre, .cell_output .text_plain'))
    .filter(shown).map(el => el.textContent.trim()).filter(t => new RegExp(arguments[0], 'm').test(t));
const broken = [];
for (const table of article.querySelectorAll('table')) {
  const width = row => Array.from(row.cells).reduce((n, c) => n + c.colSpan, 0);
  const rows = Array.from(table.rows), header = rows.length ? width(rows[0]) : 0;
  rows.filter(r => width(r) !== header || Array.from(r.cells).some(c => /\\\\\\|/.test(c.textContent)))
      .forEach(r => broken.push(name(r)));
}
const wide = Array.from(article.querySelectorAll('table, img, pre, svg, .js-plotly-plot, .cell_output > div'))
    .filter(shown).filter(el => {
      const r = el.getBoundingClientRect();
      return r.width > 0 && (r.right > right + 1 || r.left < left - 1 || el.scrollWidth > el.clientWidth + 1);
    }).map(el => name(el) + ' ' + Math.round(el.getBoundingClientRect().width) + '/' +
                 Math.round(el.scrollWidth) + ' px');
const small = Array.from(article.querySelectorAll('.cell_output img')).filter(shown)
    .filter(i => i.complete && i.naturalWidth > 0 && i.clientWidth < arguments[1] * i.naturalWidth)
    .map(i => name(i) + ' at ' + Math.round(100 * i.clientWidth / i.naturalWidth) + '%');
return {column: right - left, cut: cut, raw: raw, broken: broken, wide: wide, small: small};
"""


@pytest.mark.parametrize("page", PAGES)
def test_the_readers_view_shows_everything_in_full_and_within_the_column(browser, built_html, page):
    """No verdict cut with "…", no raw repr (a Series' ``dtype:``, a bare tuple), no table row with a cell too
    many or too few, no element wider than the text column (or scrolling sideways: a code line too long), no
    figure shown below 60 % of its natural size."""
    from explainopt import plots

    _open(browser, built_html / "book" / f"{page}.html", settle=0.5)
    view = browser.execute_script(READERS_VIEW, RAW_REPR, plots.MIN_SCALE)
    assert view["column"] > 0.8 * plots.COLUMN_PX, "the text column is narrower than the figures are drawn for"
    assert not view["cut"], f"a verdict cut short: {view['cut']}"
    assert not view["raw"], f"a raw repr printed: {view['raw']}"
    assert not view["broken"], f"a broken table row: {view['broken']}"
    assert not view["wide"], f"wider than the {view['column']:.0f} px column: {view['wide']}"
    assert not view["small"], f"a figure shown too small: {view['small']}"


def test_the_api_reference_renders_offline_with_its_signatures_and_examples(browser, built_html):
    _open(browser, built_html / "book" / "api.html", settle=0.5)
    assert browser.title.startswith("API reference")
    signatures = browser.execute_script("return document.querySelectorAll('dl.py dt.sig').length")
    assert signatures >= 100, f"only {signatures} documented objects"
    examples = browser.find_elements("css selector", "div.doctest")
    assert len(examples) >= 50 and examples[0].is_displayed()
    text = browser.find_element("tag name", "body").text
    assert "nearest_counterfactual" in text and ":func:" not in text and ":class:" not in text

