"""A real browser for the app's tests: headless Chromium (Debian's chromium and chromium-driver, installed by
.ci/run) and the few page actions the browser tests share. Importing it skips the calling module where the browser
is missing, except in CI (INFINIPOT_REQUIRE_BROWSER), where a missing browser is an error."""

from __future__ import annotations

import os
import re
import shutil

import pytest
from helpers import wait_until

CHROMIUM = shutil.which("chromium")
DRIVER = shutil.which("chromedriver")
if not (CHROMIUM and DRIVER):
    if os.environ.get("INFINIPOT_REQUIRE_BROWSER"):  # set by .ci/run, which installs them
        raise RuntimeError("the browser tests need Debian's chromium and chromium-driver")
    pytest.skip("needs Debian's chromium and chromium-driver (.ci/run installs them)", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

# The app walk's browser, in a taller window.
from benchmarks.app_walk.browser import CHROMIUM_FLAGS as WALK_FLAGS  # noqa: E402

CHROMIUM_FLAGS = (*WALK_FLAGS, "--window-size=1280,1800")


def start_browser(profile_dir) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile_dir}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)  # no selenium-manager
    driver.implicitly_wait(0)
    return driver


def wait_for(check, what: str, timeout=180.0, every=0.25):
    return wait_until(check, timeout, every, what=what, ignore=(Exception,))  # an error: the page is still rendering


def visible_text(driver, css: str) -> str:
    return driver.find_element(By.CSS_SELECTOR, css).text


def open_tab(driver, name: str) -> None:
    tab = next(b for b in driver.find_elements(By.CSS_SELECTOR, "button[role='tab']") if b.text.strip() == name)
    tab.click()


def replace_value(driver, css: str, value: str) -> None:
    field = driver.find_element(By.CSS_SELECTOR, css)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(value, Keys.TAB)


def normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def error_badges(driver) -> list[str]:
    """What Gradio shows on a component whose event failed: a visible "Error" badge (no message of ours)."""
    found = driver.find_elements(By.XPATH, "//*[normalize-space(text())='Error']")
    return [element.get_attribute("outerHTML")[:200] for element in found if element.is_displayed()]


def open_page(driver, url: str) -> None:
    driver.get(url)
    wait_for(lambda: "InfiniPot document chat" in driver.find_element(By.TAG_NAME, "body").text, "the page", 60)
