#!/usr/bin/env python3
"""An admin key on the page at `/`, in a real browser (chromium with Playwright): every key's
sessions are listed with their owner, and opening another key's session shows it and goes
on with it as that key's (`?owner=`).

Usage: TINYAGENT_BASE_URL=http://127.0.0.1:PORT TINYAGENT_KEY=ADMIN-KEY [CHROMIUM=...] page_admin.py

The server (started by tests/page.rs) has alice's session `alice-chat` (one turn: "7 + 8?",
"answer 1") and its scripted model answers the next message "answer 2".
"""

import os
import re
import shutil
import sys

from playwright.sync_api import expect, sync_playwright

BASE = os.environ["TINYAGENT_BASE_URL"]
KEY = os.environ["TINYAGENT_KEY"]
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if not CHROMIUM:
    sys.exit("chromium is not installed: run `bash scripts/setup.sh --test`")

TIMEOUT_MS = 20_000

with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
    page = browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    violations = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(BASE + "/")
    key = page.get_by_label("API key")
    key.fill(KEY)
    key.press("Tab")
    expect(page.locator("#sessions-owner")).to_have_text("Every key's (admin key ops)")
    listed = page.locator('#sessions button[data-id="alice-chat"]')
    expect(listed).to_contain_text("key alice")
    expect(listed).to_have_attribute("data-owner", "alice")
    listed.click()
    expect(page.locator(".turn.user")).to_have_text(re.compile(r"7 \+ 8\?"))
    expect(page.locator(".turn.assistant")).to_contain_text("answer 1")
    assert "&o=alice" in page.url, page.url

    message = page.get_by_label("Message")
    message.fill("and then?")
    message.press("Enter")
    expect(page.locator('.turn.assistant[data-finished="true"]')).to_contain_text("answer 2")
    assert not violations, violations
    browser.close()
print("page admin: ok")
