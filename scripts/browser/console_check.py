#!/usr/bin/env python3
"""Opens the gateway's operator console in headless Chromium, as an operator would, and prints
what it found as JSON: the figures (every element with a data-field attribute), the relay and
push rows, and whether the page fits a desktop window and a phone's screen.

    console_check.py BASE_URL ADMIN_TOKEN OUTPUT_DIR

Signs in through the form, reads the page, then emulates a phone (390 x 844 CSS pixels, as an
iPhone 14) and reads it again. Screenshots land in OUTPUT_DIR. Uses Debian's chromium and
chromedriver (no browser download), driven through Selenium.
"""
import json
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": True}

# Everything a page shows, read in the browser after layout.
READ_PAGE = """
const fields = {};
for (const element of document.querySelectorAll('[data-field]')) {
    const name = element.dataset.field;
    (fields[name] = fields[name] || []).push(element.textContent.trim());
}
const rows = (selector, key) => Array.from(document.querySelectorAll(selector)).map(row => ({
    key: row.getAttribute(key), cells: Array.from(row.cells).map(cell => cell.textContent.trim())}));
// The viewport without its scrollbar.
const width = document.documentElement.clientWidth;
// Anything drawn past the right edge would need a sideways scroll (tables scroll inside their
// own box, which is fine; the page itself must not).
const overflowing = Array.from(document.querySelectorAll('section, header, footer, dl, h2'))
    .filter(element => element.getBoundingClientRect().right > width + 0.5)
    .map(element => element.id || element.tagName.toLowerCase());
return {
    title: document.title,
    refresh: (document.querySelector('meta[http-equiv="refresh"]') || {}).content || null,
    scripts: document.scripts.length,
    fields: fields,
    outcomes: rows('tr[data-outcome]', 'data-outcome'),
    relays: rows('tr[data-relay]', 'data-relay'),
    sparklines: document.querySelectorAll('#pushes svg polyline').length,
    innerWidth: window.innerWidth,
    clientWidth: width,
    scrollWidth: document.documentElement.scrollWidth,
    overflowing: overflowing,
    smallestFontPx: Math.min(...Array.from(document.querySelectorAll('body *'))
        .filter(element => element.childElementCount === 0 && element.textContent.trim())
        .map(element => parseFloat(getComputedStyle(element).fontSize))),
};
"""


def read_settled(driver) -> dict:
    """Reads the page, reloading it (for up to 30 s) while a figure the database gives is missing.

    The console takes its figures from a snapshot refreshed at most once a second, and a probe
    that misses its deadline (a busy machine) shows "not ready" or "did not answer in time" until
    the next refresh answers. An operator would reload; so does this. What it reads last is
    returned either way, so a database that never answers is still reported as such.
    """
    deadline = time.monotonic() + 30
    while True:
        page = driver.execute_script(READ_PAGE)
        fields = page["fields"]
        settled = fields.get("readiness") == ["ready"] and "queue-unavailable" not in fields
        if settled or time.monotonic() > deadline:
            return page
        time.sleep(1.1)
        driver.refresh()
        WebDriverWait(driver, 15).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#queue")))


def main() -> int:
    base, token, output = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(30)
    result = {}
    try:
        driver.get(base + "/admin")
        result["signInForm"] = len(driver.find_elements(By.CSS_SELECTOR, "form[action='/admin/login'] input#token")) == 1
        driver.find_element(By.ID, "token").send_keys(token)
        driver.find_element(By.CSS_SELECTOR, "form[action='/admin/login'] button").click()
        WebDriverWait(driver, 15).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#queue")))
        result["url"] = driver.current_url
        result["desktop"] = read_settled(driver)
        driver.save_screenshot(output + "/console-desktop.png")

        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)
        driver.refresh()
        WebDriverWait(driver, 15).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "#queue")))
        result["phone"] = read_settled(driver)
        driver.save_screenshot(output + "/console-phone.png")

        # Signing out ends the session: the console is the sign-in form again.
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        driver.find_element(By.CSS_SELECTOR, "form[action='/admin/logout'] button").click()
        WebDriverWait(driver, 15).until(expected_conditions.presence_of_element_located((By.ID, "token")))
        result["signedOut"] = len(driver.find_elements(By.CSS_SELECTOR, "#queue")) == 0
    finally:
        driver.quit()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
