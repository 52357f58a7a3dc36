#!/usr/bin/env python3
"""The page at `/` in a real browser: Debian's chromium driven by Playwright for Python.

Usage: TINYAGENT_BASE_URL=http://127.0.0.1:PORT TINYAGENT_KEY=KEY [CHROMIUM=/usr/bin/chromium] page.py

The server (started by tests/page.rs) offers the agent `calc`, whose scripted model calls the
`add` tool with {"a": 7, "b": 8} and answers "7 + 8 = 15". The script enters the API key,
asks with the keyboard (Enter sends, Shift+Enter is a new line), waits for the streamed
answer and the tool call's timeline entry, reloads the page and reopens the session from the
list. Playwright's own browsers are never downloaded: the system chromium is used.
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

    # Without a key the API refuses; the page says so.
    expect(page.locator("#agent-about")).to_contain_text("no API key was given")

    key = page.get_by_label("API key")
    key.fill(KEY)
    key.press("Tab")  # `change` stores the key and loads the agents
    agent = page.get_by_label("Agent")
    expect(agent.locator("option")).to_have_text(["calc"])
    expect(page.locator("#agent-about")).to_have_text("The calc agent")

    message = page.get_by_label("Message")
    message.focus()
    # Shift+Enter is a new line, not a send.
    message.type("line one")
    message.press("Shift+Enter")
    message.type("line two")
    assert message.input_value() == "line one\nline two", repr(message.input_value())
    expect(page.locator(".turn.user")).to_have_count(0)
    message.fill("")

    message.type("7 + 8?")
    message.press("Enter")
    expect(page.locator(".turn.user")).to_have_text(re.compile(r"7 \+ 8\?"))
    answer = page.locator('.turn.assistant[data-finished="true"]')
    expect(answer).to_contain_text("7 + 8 = 15")
    entry = answer.locator("li.tool-call")
    expect(entry).to_have_count(1)
    expect(entry.locator(".tool-name")).to_have_text("add")
    expect(entry.locator("pre.arguments")).to_contain_text('"a": 7')
    expect(entry.locator("pre.result")).to_have_text("15")
    expect(entry.locator(".status")).to_have_text(re.compile(r"^done · [0-9.]+ ms$"))
    # Focus is back in the message box, ready for the next question.
    assert page.evaluate("document.activeElement.id") == "input"
    session_id = re.search(r"#s=(.+)$", page.url).group(1)
    print("answered in session", session_id, "| tool entry:", entry.inner_text().replace("\n", " "))

    # A fresh page: the key comes from localStorage, the session from the list.
    page.goto(BASE + "/")
    expect(page.get_by_label("API key")).to_have_value(KEY)
    listed = page.locator(f'#sessions button[data-id="{session_id}"]')
    expect(listed).to_contain_text("4 messages")
    expect(page.locator(".turn")).to_have_count(0)
    listed.focus()
    page.keyboard.press("Enter")
    expect(listed).to_have_attribute("aria-current", "true")
    expect(page.locator(".turn.user")).to_have_text(re.compile(r"7 \+ 8\?"))
    reopened = page.locator(".turn.assistant")
    expect(reopened).to_contain_text("7 + 8 = 15")
    expect(reopened.locator("li.tool-call .tool-name")).to_have_text("add")
    expect(reopened.locator("li.tool-call pre.result")).to_have_text("15")
    assert page.evaluate("document.activeElement.id") == "input"
    print("reopened after reload:", page.locator("#transcript").inner_text().replace("\n", " | "))

    # Reloading with the session in the address reopens it too.
    page.reload()
    expect(page.locator(".turn.assistant")).to_contain_text("7 + 8 = 15")
    assert not violations, violations
    browser.close()
print("page: ok")
