"""Watch `cellbox serve`'s web view in a real Chromium while an MCP client runs cells.

Usage: ui_browser.py BASE_URL TOKEN OTHER_TOKEN ADMIN_TOKEN CHROMIUM [SCREENSHOT.png]

BASE_URL is the server (http://127.0.0.1:PORT), TOKEN signs in the principal
whose cells run, OTHER_TOKEN another principal, ADMIN_TOKEN an admin (who sees
every principal's sessions). Prints one JSON object with
what it saw; a failed check raises, so the exit status says it all. Every wait
is on a condition (a text in the page, a call's answer), never a sleep.
"""
import asyncio
import json
import os
import sys
import time

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from playwright.async_api import async_playwright

BASE, TOKEN, OTHER, ADMIN, CHROMIUM = sys.argv[1:6]
SCREENSHOT = sys.argv[6] if len(sys.argv) > 6 else None
SESSION = "watch"
LOADS = 20  # sessions streaming at once while the page watches one
WAIT_MS = 60000

# HTML a cell displays: every way it could try to reach the page, its API or the network.
HOSTILE = """
<b id="inert">bold, but inert</b>
<script>
  window.top.pwned = 1;
  parent.document.title = "pwned";
  fetch("/ui/api/sessions", {headers: {"X-Cellbox-UI": "1"}})
    .then(r => r.text()).then(t => fetch("%(base)s/leak?" + encodeURIComponent(t)));
  new Image().src = "%(base)s/leak?cookie=" + encodeURIComponent(document.cookie);
</script>
<img src="x" onerror="new Image().src='%(base)s/leak?onerror'">
<form action="%(base)s/ui/api/reset" method="post"><input name="session" value="watch"></form>
<script>document.forms[0].submit()</script>
"""


def text_of(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def run(mcp, code):
    result = await mcp.call_tool("eval", {"cells": [{"code": code}], "session": SESSION})
    return text_of(result), result


async def text_in_cells(page, needle):
    """Wait for `needle` anywhere in the cells shown, their code included."""
    await page.wait_for_function(
        "needle => document.getElementById('cells').innerText.includes(needle)", arg=needle, timeout=WAIT_MS
    )


async def output_in_cells(page, needle):
    """Wait for `needle` in what the cells printed or showed (not in their code, which shows first)."""
    await page.wait_for_function(
        "needle => [...document.querySelectorAll('#cells .outputs')].some(o => o.textContent.includes(needle))",
        arg=needle,
        timeout=WAIT_MS,
    )


#: Where the page is: its top, its bottom and its height, then the changes to #cells seen meanwhile.
PLACE = (
    "() => [window.scrollY, window.scrollY + window.innerHeight, document.body.scrollHeight,"
    " window.__changes || []]"
)


async def frames(page):
    """Wait two animation frames: what the page does once a frame is done."""
    await page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")


async def scroll_to(page, where):
    """Scroll as a reader does, with the keyboard: to the top (Home), the end (End), or from the
    end two pages up (PageUp) to the middle."""
    await page.evaluate("() => document.activeElement && document.activeElement.blur()")
    await page.keyboard.press("Home" if where == "top" else "End")
    if where == "top":
        await page.wait_for_function("() => window.scrollY === 0", timeout=WAIT_MS)
    else:
        await page.wait_for_function(
            "() => window.scrollY + window.innerHeight >= document.body.scrollHeight - 2", timeout=WAIT_MS
        )
    if where == "middle":
        await settled(page)
        await page.keyboard.press("PageUp")
        await page.keyboard.press("PageUp")
        await page.wait_for_function(
            "() => window.scrollY + window.innerHeight < document.body.scrollHeight - 100", timeout=WAIT_MS
        )
    await settled(page)


async def settled(page):
    """Wait until the page's scroll position holds for two frames (a wheel's scroll may be animated)."""
    await page.wait_for_function(
        """() => new Promise((done) => { let last = -1;
             const look = () => { if (window.scrollY === last) return done(true);
               last = window.scrollY; requestAnimationFrame(() => requestAnimationFrame(look)); };
             look(); })""",
        timeout=WAIT_MS,
    )


async def cells_of(page):
    """What the page's cells show, for a failed check's message: each one's count and status, code and output."""
    return await page.evaluate(
        "() => [...document.querySelectorAll('#cells > *')].map(c => [...c.querySelectorAll('header, .source, .outputs')]"
        ".map(part => part.textContent.slice(0, 80)).join(' | '))"
    )


async def sign_in(page, token):
    await page.goto(BASE + "/ui")
    await page.wait_for_selector("#token", state="visible", timeout=WAIT_MS)
    await page.fill("#token", token)
    await page.click("#signin-form button[type=submit]")
    await page.wait_for_selector("#app", state="visible", timeout=WAIT_MS)


async def browser_checks(mcp, workspace):
    seen = {}
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = await browser.new_context(accept_downloads=True, permissions=["clipboard-read", "clipboard-write"])
        page = await context.new_page()
        requests = []
        page.on("request", lambda request: requests.append(request.url))
        page.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))

        # A wrong token is refused, with the reason in the page.
        await page.goto(BASE + "/ui")
        await page.wait_for_selector("#token", state="visible", timeout=WAIT_MS)
        await page.fill("#token", "cbx_not-a-token")
        await page.click("#signin-form button[type=submit]")
        await page.wait_for_function(
            "() => document.getElementById('signin-error').textContent.length > 0", timeout=WAIT_MS
        )
        assert await page.is_hidden("#app")
        await sign_in(page, TOKEN)
        # Events are published only while someone watches: the stream is open first.
        await page.wait_for_selector("#link.on", timeout=WAIT_MS)
        assert "cellbox_ui" not in await page.evaluate("() => document.cookie"), "the sign-in cookie is HttpOnly"

        # The session an agent made is listed; choosing it, from the keyboard, shows its cells.
        button = page.locator('#sessions button[data-session$="/%s"]' % SESSION)
        await button.wait_for(timeout=WAIT_MS)
        await button.focus()
        await page.keyboard.press("Enter")
        await text_in_cells(page, "x = 41")

        # Streams appear while the cell runs: the cell waits for a file the test
        # makes only once the page shows its first line.
        await page.evaluate(
            """() => { window.__seen = {}; new MutationObserver(() => {
                 for (const m of document.getElementById('cells').innerText.matchAll(/line (\\d) at (\\d+)/g))
                   if (!(m[1] in window.__seen)) window.__seen[m[1]] = [Number(m[2]), Date.now()];
               }).observe(document.getElementById('cells'), {childList: true, subtree: true, characterData: true}); }"""
        )
        streaming = asyncio.ensure_future(
            run(
                mcp,
                "import os, time\n"
                "print(f'line 0 at {time.time()*1000:.0f}', flush=True)\n"
                "while not os.path.exists('go-on'):\n    time.sleep(0.01)\n"
                "for i in range(1, 4):\n    print(f'line {i} at {time.time()*1000:.0f}', flush=True)\n"
                "    time.sleep(0.05)\n",
            )
        )
        await output_in_cells(page, "line 0 at")
        assert not streaming.done(), "the first line was shown while its cell still ran"
        open(os.path.join(workspace, "go-on"), "w").close()
        text, _ = await streaming
        assert "line 3" in text, text
        await output_in_cells(page, "line 3 at")
        latencies = [seen_at - printed for printed, seen_at in (await page.evaluate("() => window.__seen")).values()]
        seen["stream_latency_ms"] = sorted(latencies)

        # The call's full output copies to the clipboard from the button on its last cell.
        copy = page.locator("#cells button[data-artifact]").last
        await copy.wait_for(timeout=WAIT_MS)
        await copy.click()
        await page.wait_for_function(
            "() => document.getElementById('notice').textContent.startsWith('Copied the full output')", timeout=WAIT_MS
        )
        copied = await page.evaluate("() => navigator.clipboard.readText()")
        assert "line 0 at" in copied and "line 3 at" in copied, copied

        # Twenty sessions stream at once: how soon the page shows the lines of the one it shows
        # (reported, not asserted: timings belong to the bench).
        for n in range(LOADS):
            await mcp.call_tool("eval", {"cells": [{"code": "0"}], "session": "load-%d" % n})
        load = page.locator('#sessions button[data-session$="/load-0"]')
        await load.wait_for(timeout=WAIT_MS)
        await load.click()
        await page.wait_for_function(
            "() => document.getElementById('session-name').textContent.endsWith('/load-0')", timeout=WAIT_MS
        )
        await page.evaluate(
            """() => { window.__ticks = {}; new MutationObserver(() => {
                 for (const m of document.getElementById('cells').innerText.matchAll(/tick (\\d+) at (\\d+)/g))
                   if (!(m[1] in window.__ticks)) window.__ticks[m[1]] = [Number(m[2]), Date.now()];
               }).observe(document.getElementById('cells'), {childList: true, subtree: true, characterData: true}); }"""
        )
        ticking = (
            "import time\nfor i in range(20):\n    print(f'tick {i} at {time.time()*1000:.0f}', flush=True)\n"
            "    time.sleep(0.05)\n"
        )
        await asyncio.gather(
            *(mcp.call_tool("eval", {"cells": [{"code": ticking}], "session": "load-%d" % n}) for n in range(LOADS))
        )
        await output_in_cells(page, "tick 19 at")
        ticks = sorted(seen_at - printed for printed, seen_at in (await page.evaluate("() => window.__ticks")).values())
        seen["busy_latency_ms"] = {"sessions": LOADS, "lines": len(ticks), "median": ticks[len(ticks) // 2], "max": ticks[-1]}
        await button.click()
        await text_in_cells(page, "x = 41")

        # A matplotlib figure arrives as an image.
        await run(mcp, "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()")
        await page.wait_for_selector("#cells img[src^='data:image/png;base64,']", timeout=WAIT_MS)

        # HTML from a cell is inert: no script of it runs, nothing leaves the page.
        payload = HOSTILE % {"base": BASE}
        await run(mcp, "from IPython.display import HTML, display\ndisplay(HTML(%r))" % payload)
        await run(mcp, "print('<script>window.top.pwned = 2</script><img src=x onerror=\"window.top.pwned=3\">')")
        await output_in_cells(page, "window.top.pwned = 2")
        # Markdown is rendered as nodes, never as HTML: its tags and a javascript: link stay text.
        markdown = "# A title\n\n**bold** and `code`\n\n- one\n- two\n\n[click](javascript:window.top.pwned=4) <img src=x onerror=window.top.pwned=5>"
        await run(mcp, "from IPython.display import Markdown, display\ndisplay(Markdown(%r))" % markdown)
        rendered = page.locator("#cells .markdown").last
        await rendered.wait_for(timeout=WAIT_MS)
        assert await rendered.locator("h3").text_content() == "A title"
        assert await rendered.locator("strong").text_content() == "bold"
        assert await rendered.locator("li").count() == 2
        assert await rendered.locator("img, a, script").count() == 0
        assert "<img src=x" in await rendered.text_content()
        # Hostile Markdown does not stall the page: openers that never close, and a book's worth.
        for n, hostile in enumerate(["`" * 20000 + "[" * 10000 + "*_" * 900, "[" * 15000 + "](" + "x" * 15000, "# x" + "#" * 30000, "x" * 200000]):
            end = "END-MD-%d" % n
            await run(mcp, "from IPython.display import Markdown, display\ndisplay(Markdown(%r))" % (hostile + "\n\n" + end))
            await output_in_cells(page, end)
        frame_element = await page.wait_for_selector("#cells iframe", timeout=WAIT_MS)
        assert await frame_element.get_attribute("sandbox") == "", "HTML output is fully sandboxed"
        frame = await frame_element.content_frame()
        await frame.wait_for_selector("#inert", timeout=WAIT_MS)
        assert await page.evaluate("() => window.pwned") is None
        assert await page.title() == "cellbox"
        if SCREENSHOT:
            await page.screenshot(path=SCREENSHOT, full_page=False)

        # Interrupt a sleeping cell from a page opened after it began: that page shows the cell's
        # code, and its interrupt ends the cell; the variables stay. (The cell says it sleeps once
        # it is in its own code, where an interrupt reaches it.)
        sleeping = asyncio.ensure_future(
            run(mcp, "import time\nbegun_before_the_page = 1\nprint('sleeping now', flush=True)\ntime.sleep(120)")
        )
        await output_in_cells(page, "sleeping now")
        late_context = await browser.new_context()
        late = await late_context.new_page()
        late.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
        await sign_in(late, TOKEN)
        await late.locator('#sessions button[data-session$="/%s"]' % SESSION).click()
        await late.wait_for_function(
            "() => [...document.querySelectorAll('#cells .source')].some(s => s.textContent.includes('begun_before_the_page'))",
            timeout=WAIT_MS,
        )
        assert await late.locator("#cells .source", has_text="begun_before_the_page").count() == 1, await cells_of(late)
        await late.wait_for_selector("#interrupt:not([disabled])", timeout=WAIT_MS)
        await late.click("#interrupt")
        text, result = await asyncio.wait_for(sleeping, WAIT_MS / 1000)
        assert "KeyboardInterrupt" in text, text
        await output_in_cells(page, "KeyboardInterrupt")
        await output_in_cells(late, "KeyboardInterrupt")
        assert await late.locator("#cells .source", has_text="begun_before_the_page").count() == 1, await cells_of(late)
        await late_context.close()
        text, _ = await run(mcp, "x")
        assert "41" in text, text

        # Fork it from the page: the copy has the variables and lives on its own.
        await page.wait_for_selector("#fork:not([disabled])", timeout=WAIT_MS)
        await page.click("#fork")
        await page.wait_for_function(
            "() => document.getElementById('notice').textContent.startsWith('Forked into')", timeout=WAIT_MS
        )
        await page.locator('#sessions button[data-session$="/%s-fork-1"]' % SESSION).wait_for(timeout=WAIT_MS)
        fork = await mcp.call_tool("eval", {"cells": [{"code": "x += 1\nx"}], "session": SESSION + "-fork-1"})
        assert "42" in text_of(fork), text_of(fork)
        text, _ = await run(mcp, "x")
        assert "41" in text, text

        # The session downloads as a notebook.
        async with page.expect_download(timeout=WAIT_MS) as download_info:
            await page.click("#download")
        download = await download_info.value
        path = await download.path()
        with open(path) as handle:
            notebook = json.load(handle)
        assert notebook["nbformat"] == 4, notebook.keys()
        sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in notebook["cells"]]
        assert any("x = 41" in source for source in sources), sources
        seen["downloaded"] = download.suggested_filename

        # Undo from the page (after its confirmation): a call that took a checkpoint is undone.
        # The page reads the session again after it: a reader who scrolled to the top stays there,
        # one at the end stays at the end.
        await run(mcp, "for i in range(300):\n    print('tall line', i)")
        await output_in_cells(page, "tall line 299")
        await page.evaluate(
            """() => { window.__rereads = 0; window.__changes = []; new MutationObserver((records) => {
                 if (records.some((r) => r.removedNodes.length)) window.__rereads++;
                 for (const r of records) window.__changes.push([r.removedNodes.length, r.addedNodes.length,
                   window.scrollY, document.body.scrollHeight]);
               }).observe(document.getElementById('cells'), {childList: true}); }"""
        )
        for where, code in (("top", "x = 99"), ("end", "x = 98")):
            await mcp.call_tool("eval", {"cells": [{"code": code}], "session": SESSION, "checkpoint": True})
            await text_in_cells(page, code)
            assert await page.evaluate("() => document.body.scrollHeight > 2 * window.innerHeight"), "a short page"
            if where == "end":
                # The tall cell is hidden first: the reading builds it anew, so the page grows, and
                # only a page that follows its reader to the end is at the end after it.
                await page.evaluate(
                    "() => [...document.querySelectorAll('#cells > *')]"
                    ".find((cell) => cell.innerText.includes('tall line 299')).style.display = 'none'"
                )
            await scroll_to(page, where)
            await page.evaluate("() => { window.__rereads = 0; window.__changes = [];"
                                " document.getElementById('notice').textContent = ''; }")
            await page.wait_for_selector("#undo:not([disabled])", timeout=WAIT_MS)
            await page.click("#undo")
            await page.wait_for_function(
                "() => document.getElementById('notice').textContent.startsWith('Undone') && window.__rereads > 0",
                timeout=WAIT_MS,
            )
            await frames(page)
            place = await page.evaluate(PLACE)
            if where == "top":
                assert place[0] == 0, "read again, the page left the top: %r" % place
            else:
                assert place[1] >= place[2] - 2, "read again, the page left the end: %r" % place
            text, _ = await run(mcp, "x")
            assert "41" in text, text

        # A reader at the end follows output as it streams in (stderr between, a figure last, which
        # grows the page as it loads); one who scrolled up stays where they are.
        for where in ("end", "middle"):
            figures = await page.locator("#cells img").count()
            await scroll_to(page, where)
            before = await page.evaluate("() => window.scrollY")
            await run(
                mcp,
                "import sys\nimport matplotlib.pyplot as plt\nfor i in range(200):\n"
                "    print('follow line', i, flush=True)\n"
                "    if i % 20 == 0:\n        print('note', i, file=sys.stderr, flush=True)\n"
                "plt.plot([1, 2, 3])\nplt.show()\nprint('" + where + " done')\n",
            )
            await output_in_cells(page, "%s done" % where)
            await page.wait_for_function(
                "(n) => { const all = document.querySelectorAll('#cells img');"
                " return all.length > n && [...all].every((image) => image.complete); }",
                arg=figures,
                timeout=WAIT_MS,
            )
            await frames(page)
            place = await page.evaluate(PLACE)
            if where == "end":
                assert place[1] >= place[2] - 2, "the page did not follow its end: %r" % place
            else:
                assert place[0] == before, "the page moved under its reader: %r, was at %d" % (place, before)

        # Reset from the page (after its confirmation): the variables are gone.
        await page.click("#reset")
        await page.wait_for_function(
            "() => document.getElementById('notice').textContent.includes('restarted')", timeout=WAIT_MS
        )
        text, result = await run(mcp, "x")
        assert result.is_error and "NameError" in text, text

        leaks = [url for url in requests if "/leak" in url or not url.startswith(BASE)]
        assert not leaks, leaks
        seen["requests"] = len(requests)

        # On a phone's screen the list stacks above the session and nothing runs off the side.
        phone = await browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
        small = await phone.new_page()
        await sign_in(small, TOKEN)
        await small.locator('#sessions button[data-session$="/%s"]' % SESSION).click()
        await text_in_cells(small, "x = 41")
        layout = await small.evaluate(
            """() => ({list: document.querySelector('nav').getBoundingClientRect().bottom,
                      session: document.getElementById('session').getBoundingClientRect().top,
                      wide: document.documentElement.scrollWidth, screen: window.innerWidth})"""
        )
        assert layout["list"] <= layout["session"] and layout["wide"] <= layout["screen"], layout
        await phone.close()

        # Another principal sees none of it.
        other = await browser.new_context()
        other_page = await other.new_page()
        await sign_in(other_page, OTHER)
        await other_page.wait_for_selector("#sessions[data-loaded]", state="attached", timeout=WAIT_MS)
        assert await other_page.locator("#sessions button").count() == 0
        name = await button.get_attribute("data-session")
        status = await other_page.evaluate(
            """name => fetch('/ui/api/notebook?session=' + encodeURIComponent(name),
                             {headers: {'X-Cellbox-UI': '1'}}).then(r => r.status)""",
            name,
        )
        assert status == 404, status

        # An admin sees the sessions of every principal, each named with its principal, and
        # watches one: a cell run now streams into the admin's page.
        admin_context = await browser.new_context()
        admin = await admin_context.new_page()
        await sign_in(admin, ADMIN)
        theirs = admin.locator('#sessions button[data-session$="/%s"]' % SESSION)
        await theirs.wait_for(timeout=WAIT_MS)
        assert await theirs.get_attribute("data-principal") != await admin.text_content("#who")
        owner = await theirs.get_attribute("data-principal")
        await theirs.click()
        await text_in_cells(admin, "x = 41")
        # The stream of that principal's engine is open (and the session was read after it opened).
        await admin.wait_for_selector('#link.on[data-watched="%s"]' % owner, timeout=WAIT_MS)
        await run(mcp, "print('seen by the admin', flush=True)")
        await output_in_cells(admin, "seen by the admin")
        await admin_context.close()
        await browser.close()
    return seen


async def main():
    async with create_mcp_http_client(headers={"Authorization": "Bearer " + TOKEN}) as http:
        async with streamable_http_client(BASE + "/mcp", http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as mcp:
                await mcp.initialize()
                text, _ = await run(mcp, "x = 41\nimport os\nos.getcwd()")
                workspace = text.strip().strip("'")
                assert os.path.isdir(workspace), text
                started = time.monotonic()
                seen = await browser_checks(mcp, workspace)
                seen["seconds"] = round(time.monotonic() - started, 1)
                return seen


print(json.dumps(asyncio.run(main())))
