"""report.html in headless Chromium: it renders without script errors, its tables sort and filter
under real clicks and typing, and every link resolves (a file next to it, or an anchor in it).

`make setup` installs Debian's chromium when it is missing; without one these tests skip and say so.
"""

from __future__ import annotations

import re
import subprocess
import urllib.parse
from pathlib import Path

import pytest
from chromium import Chromium, binary
from report_data import build

from kafkaops.fleet.report import render_html

pytestmark = pytest.mark.skipif(binary() is None, reason="no chromium on PATH: `make setup` installs Debian's "
                                                         "chromium package (apt-get install chromium)")


@pytest.fixture
def report(tmp_path: Path) -> Path:
    page = tmp_path / "out" / "report.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render_html(build(tmp_path)))
    return page


@pytest.fixture
def browser(tmp_path: Path):
    with Chromium.start(tmp_path / "chromium-profile") as chromium:
        yield chromium


def _column(browser: Chromium, table: str, header: str) -> list[str]:
    """The visible cells of the column headed `header`, top to bottom."""
    return browser.evaluate(f"""(function () {{
        var t = document.getElementById('{table}');
        var i = Array.prototype.findIndex.call(t.tHead.rows[0].cells, function (h) {{ return h.textContent === '{header}'; }});
        return Array.prototype.filter.call(t.tBodies[0].rows, function (r) {{ return !r.hidden; }})
            .map(function (r) {{ return r.cells[i].textContent; }});
    }})()""")


def _header(table: str, header: str, browser: Chromium) -> str:
    index = browser.evaluate(f"""Array.prototype.findIndex.call(document.getElementById('{table}').tHead.rows[0].cells,
        function (h) {{ return h.textContent === '{header}'; }})""")
    return f"#{table} thead th:nth-child({index + 1})"


def _natural(text: str) -> list:
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", text)]


def test_renders_without_errors(report, browser):
    browser.open(report.as_uri())
    assert browser.errors() == []
    assert browser.evaluate("document.title") == "kafkaops fleet plan"
    assert browser.evaluate("document.querySelectorAll('table.data').length") == 8
    assert browser.evaluate("document.querySelectorAll('svg').length") == 4
    # the script ran: every sortable header is keyboard-reachable and announces its order
    assert browser.evaluate("Array.prototype.every.call(document.querySelectorAll('table.data th'),"
                            " function (h) { return h.getAttribute('aria-sort') === 'none' && h.tabIndex === 0; })")


def test_sorting_by_clicking_headers(report, browser):
    browser.open(report.as_uri())
    names = _column(browser, "t-plan", "name")
    browser.click(_header("t-plan", "name", browser))
    assert _column(browser, "t-plan", "name") == sorted(names, key=_natural)
    browser.click(_header("t-plan", "name", browser))
    assert _column(browser, "t-plan", "name") == sorted(names, key=_natural, reverse=True)
    # numbers sort as numbers (9 before 10); an empty cell (no snapshot) below every number
    browser.click(_header("t-clusters", "observed topics", browser))
    assert _column(browser, "t-clusters", "observed topics") == ["", "12", "13", "14"]
    browser.click(_header("t-clusters", "brokers", browser))
    browser.click(_header("t-clusters", "brokers", browser))
    assert _column(browser, "t-clusters", "brokers") == ["5", "4", "3", ""]
    # manifest links sort by file, then by line as a number (line 94 before line 146)
    browser.click(_header("t-plan", "manifest", browser))
    manifests = _column(browser, "t-plan", "manifest")
    assert manifests == sorted(manifests, key=lambda m: (m.split(":")[0], int(m.split(":")[1])))
    assert browser.evaluate(f"document.querySelector('{_header('t-plan', 'manifest', browser)}')"
                            ".getAttribute('aria-sort')") == "ascending"
    dom = browser.evaluate("document.documentElement.outerHTML")  # the DOM after the clicks (as --dump-dom)
    assert dom.count('aria-sort="ascending"') == 1 and dom.count('aria-sort="descending"') == 1
    assert browser.errors() == []


def test_filtering_by_typing(report, browser):
    browser.open(report.as_uri())
    field = "input[data-filter='t-plan']"
    browser.type_into(field, "edge refused")
    assert _column(browser, "t-plan", "name") == ["edge.orders.7"]
    assert browser.evaluate("document.querySelector('[data-shown=\"t-plan\"]').textContent") == "1 of 24 rows"
    browser.type_into(field, "PROD")  # case does not matter
    assert _column(browser, "t-plan", "cluster") == ["prod"] * 8
    browser.type_into(field, "")
    assert len(_column(browser, "t-plan", "cluster")) == 24
    browser.type_into("input[data-filter='t-policy']", "error")
    assert _column(browser, "t-policy", "severity") == ["error"] * 3
    # filtering then sorting keeps the filter
    browser.click(_header("t-policy", "cluster", browser))
    assert _column(browser, "t-policy", "cluster") == ["dev", "edge", "prod"]
    assert browser.errors() == []


def test_every_link_resolves(report, browser):
    browser.open(report.as_uri())
    links = browser.evaluate("Array.prototype.map.call(document.querySelectorAll('a[href]'), function (a) {"
                             " return [a.getAttribute('href'), a.href]; })")
    assert len(links) > 50
    for raw, resolved in links:
        url = urllib.parse.urlsplit(resolved)
        if raw.startswith("#"):
            target = urllib.parse.unquote(url.fragment)
            assert browser.evaluate(f"document.getElementById({target!r}) !== null"), raw
        else:
            assert url.scheme == "file" and not raw.startswith(("/", "file:")), raw  # relative: moves with the report
            assert Path(urllib.parse.unquote(url.path)).is_file(), resolved
    # what a manifest link leads to is the manifest (Chromium downloads .yaml rather than show it)
    for raw, resolved in links:
        if raw.endswith("topics.yaml"):
            assert "kind: KafkaTopic" in browser.read(resolved)
    # following a cluster link lands on the cluster's row
    browser.click("#t-plan tbody a[href='#cluster-edge']")
    browser.wait_for("Page.navigatedWithinDocument")
    assert browser.evaluate("document.querySelector('tr:target').cells[0].textContent") == "edge"


def test_dump_dom_shows_the_scripted_page(report, tmp_path):
    args = [binary(), "--headless", "--disable-gpu", "--no-sandbox", f"--user-data-dir={tmp_path / 'dump'}",
            "--dump-dom", report.as_uri()]
    dom = subprocess.run(args, capture_output=True, text=True, timeout=120).stdout
    assert '<table class="data" id="t-plan">' in dom
    assert dom.count('aria-sort="none"') == dom.count("<th scope=")  # the script decorated every header
