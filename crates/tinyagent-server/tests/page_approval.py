#!/usr/bin/env python3
"""Approving a paused call on the page at `/`, in a real browser (chromium with Playwright).

Usage: TINYAGENT_BASE_URL=http://127.0.0.1:PORT TINYAGENT_KEY=KEY [CHROMIUM=/usr/bin/chromium] page_approval.py

The server (started by tests/page.rs) offers the agent `calc`, whose `add` calls wait for
approval; its scripted model calls `add` with {"a": 2, "b": 3}, then answers "2 + 3 = 5". The
script asks, sees the call wait with its arguments, reloads the page, reopens the session
(the waiting call is shown again), approves it and waits for the answer.
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
    # The page runs under a strict Content-Security-Policy: nothing of it may be refused.
    violations = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(BASE + "/")
    key = page.get_by_label("API key")
    key.fill(KEY)
    key.press("Tab")
    expect(page.get_by_label("Agent").locator("option")).to_have_text(["calc"])

    message = page.get_by_label("Message")
    message.fill("2 + 3?")
    message.press("Enter")
    waiting = page.get_by_role("group", name="Calls waiting for approval")
    expect(waiting).to_contain_text("add")
    expect(waiting).to_contain_text('"a": 2')
    expect(page.locator("li.tool-call .status")).to_have_text("waits for approval")
    session_id = re.search(r"#s=(.+)$", page.url).group(1)

    # Reopened later, the session still shows the call waiting.
    page.reload()
    page.locator(f'#sessions button[data-id="{session_id}"]').click()
    waiting = page.get_by_role("group", name="Calls waiting for approval")
    expect(waiting).to_contain_text("add")
    waiting.get_by_role("button", name="Approve").click()
    answer = page.locator('.turn.assistant[data-finished="true"]')
    expect(answer).to_contain_text("2 + 3 = 5")
    expect(answer.locator("li.tool-call .status")).to_contain_text("done")
    expect(waiting.get_by_role("button", name="Approve")).to_be_disabled()
    print("approved on the page:", page.locator("#transcript").inner_text().replace("\n", " | "))
    assert not violations, violations
    browser.close()
print("page approval: ok")
