"""Drive Metro's web console (chalicelib/api/console/) in a headless Chromium through selenium: the browser, the
page's controls by their ids, and the screenshots of docs/console.md."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select, WebDriverWait

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "docs" / "console"
WAIT = 20.0


def browser_or_skip() -> None:
    """The only reason these tests skip: no browser to drive (Debian: apt-get install chromium chromium-driver)."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.skip(f"the console's browser tests need {' and '.join(missing)} (Debian packages chromium, "
                    "chromium-driver)")


@contextmanager
def chromium() -> Iterator[webdriver.Chrome]:
    browser_or_skip()
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,1000", "--lang=en-US", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


class Console:
    """The console page of one stack, in one browser."""

    def __init__(self, driver: webdriver.Chrome, base: str) -> None:
        self.driver, self.base = driver, base

    # -- generic ----------------------------------------------------------------------------------------------------
    def open(self) -> Console:
        self.driver.get(f"{self.base}/console")
        self.until(lambda: self.visible("app") or self.visible("login"), "the page to start")
        return self

    def until(self, check: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
        def attempt(_: Any) -> Any:
            try:
                return check()
            except (StaleElementReferenceException, NoSuchElementException):  # not (yet) or no longer there
                return False
        return WebDriverWait(self.driver, timeout, poll_frequency=0.1).until(
            attempt, f"waited {timeout}s for {what}; error box: {self.error_text()!r}")

    def by_id(self, element_id: str) -> WebElement:
        return self.driver.find_element(By.ID, element_id)

    def visible(self, element_id: str) -> bool:
        return bool(self.by_id(element_id).is_displayed())

    def text(self, element_id: str) -> str:
        return str(self.by_id(element_id).text)

    def error_text(self) -> str:
        try:
            box = self.driver.find_element(By.ID, "error")
            return str(box.text) if box.is_displayed() else ""
        except Exception:  # the page is not there (yet)
            return ""

    def type(self, element_id: str, text: str) -> None:
        field = self.by_id(element_id)
        field.clear()
        field.send_keys(text)

    def click(self, element_id: str) -> None:
        self.by_id(element_id).click()

    def choose(self, element_id: str, value: str) -> None:
        self.until(lambda: any(o.get_attribute("value") == value for o in Select(self.by_id(element_id)).options),
                   f"{value} among the choices of #{element_id}")
        Select(self.by_id(element_id)).select_by_value(value)

    def wait_text(self, element_id: str, needle: str) -> str:
        return str(self.until(lambda: needle in self.text(element_id) and self.text(element_id),
                              f"{needle!r} in #{element_id}"))

    def wait_error(self, needle: str) -> str:
        return str(self.until(lambda: needle in self.error_text() and self.error_text(), f"an error with {needle!r}"))

    def no_error(self) -> None:
        assert self.error_text() == "", self.error_text()

    def row(self, table: str, attribute: str, value: str) -> WebElement:
        found: WebElement = self.until(
            lambda: self.driver.find_element(By.CSS_SELECTOR, f'#{table} tr[{attribute}="{value}"]'),
            f"a row {attribute}={value} in #{table}")
        return found

    def rows(self, table: str) -> list[WebElement]:
        return list(self.driver.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr"))

    def shot(self, name: str) -> None:
        """docs/console/NAME.png, when METRO_CONSOLE_SCREENSHOTS=1 (docs/console.md shows them)."""
        if os.environ.get("METRO_CONSOLE_SCREENSHOTS") == "1":
            SHOTS.mkdir(parents=True, exist_ok=True)
            self.driver.execute_script("window.scrollTo(0, 0)")
            height = self.driver.execute_script("return document.documentElement.scrollHeight")
            self.driver.set_window_size(1280, max(700, min(int(height) + 40, 1800)))
            self.driver.save_screenshot(str(SHOTS / f"{name}.png"))
            self.driver.set_window_size(1280, 1000)

    def csp_violations(self) -> list[str]:
        log: list[dict[str, Any]] = self.driver.get_log("browser")  # type: ignore[no-untyped-call]
        return [entry["message"] for entry in log
                if "Content Security Policy" in entry["message"] or "Refused to" in entry["message"]]

    # -- the console's screens ------------------------------------------------------------------------------------
    def open_project(self, project: str) -> None:
        self.type("project", project)
        self.click("open-project")
        self.until(lambda: self.visible("tabs"), "the project's tabs")

    def tab(self, name: str) -> None:
        self.driver.find_element(By.CSS_SELECTOR, f'#tabs button[data-tab="{name}"]').click()
        self.until(lambda: self.visible(f"tab-{name}"), f"the {name} tab")

    def refresh(self) -> None:
        self.click("refresh")

    def open_subscription(self, sub_id: str) -> None:
        self.tab("subscriptions")
        self.row("subs-table", "data-subscription", sub_id).find_element(By.CSS_SELECTOR, "button.open").click()
        self.until(lambda: self.visible("sub-panel") and self.text("sub-name") == sub_id, f"the panel of {sub_id}")

    def messages(self) -> list[dict[str, str]]:
        out = []
        for row in self.rows("messages-table"):
            cells = row.find_elements(By.TAG_NAME, "td")
            out.append({"id": str(row.get_attribute("data-message-id")), "data": str(cells[3].text),
                        "attributes": str(cells[4].text), "ordering": str(cells[5].text)})
        return out

    def messages_after(self, button: str, note: str) -> list[dict[str, str]]:
        """Click Peek or Pull, and the messages shown once the note says it is done."""
        self.driver.execute_script("document.getElementById('messages-note').textContent = ''")
        self.click(button)
        self.wait_text("messages-note", note)
        return self.messages()
