#!/usr/bin/env python3
"""The page at `/` cannot be framed by another site, in a real browser (chromium with
Playwright), and runs under its Content-Security-Policy without a violation.

Usage: TINYAGENT_BASE_URL=http://127.0.0.1:PORT TINYAGENT_FRAMING_URL=http://127.0.0.1:OTHER
       [CHROMIUM=/usr/bin/chromium] page_frame.py

The framing page (another origin: another port, served by tests/page.rs) frames the server's
page (`#victim`) and a page of its own (`#control`), and notes when each has loaded. A page that
could be framed would show its composer and its Approve buttons inside the other site, under a
lure: chromium must refuse to render it, and say why.
"""

import os
import shutil
import sys

from playwright.sync_api import expect, sync_playwright

BASE = os.environ["TINYAGENT_BASE_URL"]
FRAMING = os.environ["TINYAGENT_FRAMING_URL"]
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if not CHROMIUM:
    sys.exit("chromium is not installed: run `bash scripts/setup.sh --test`")

TIMEOUT_MS = 20_000

with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    console = []
    page.on("console", lambda message: console.append(message.text))

    # On its own, the page runs under its policy: its script and style apply, nothing is refused.
    page.goto(BASE + "/")
    expect(page.locator("#agent-about")).to_contain_text("no API key was given")
    color = page.evaluate("getComputedStyle(document.querySelector('header')).backgroundColor")
    assert color == "rgb(255, 255, 255)", color
    refused = [m for m in console if "Content Security Policy" in m]
    assert not refused, refused
    print("the page alone: script and style run, no violation")

    # Framed by another origin: the control frame (the framing site's own page) shows; the
    # server's page does not.
    page.goto(FRAMING + "/")
    page.wait_for_function("window.loaded && window.loaded.victim && window.loaded.control")
    expect(page.frame_locator("#control").locator("#inner")).to_have_text("the framing site's own page")
    assert page.frame_locator("#victim").locator("#composer").count() == 0
    assert page.frame_locator("#victim").locator("text=Approve").count() == 0
    framed = [f for f in page.frames if f.url.startswith(BASE)]
    for frame in framed:
        assert frame.locator("#composer").count() == 0, frame.url
    # Chromium says why in the framing page's console (the message may arrive just after).
    refusals = []
    for _ in range(200):
        refusals = [m for m in console if "frame-ancestors 'none'" in m or "X-Frame-Options" in m]
        if refusals:
            break
        page.wait_for_timeout(50)
    assert refusals, console
    print("framed by", FRAMING, "->", refusals[0])
    browser.close()
print("page frame: ok")
