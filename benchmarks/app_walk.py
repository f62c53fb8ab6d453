"""Walk through the web app as a new user would and take named screenshots of issue 33's items (and issue 32's, 13-15;
issue 54's, 16; issue 55's small things, 17).

The same walk runs against any checkout, so the screenshots of the old code ("before") and of the fixed code
("after") can be put side by side:

    .venv/bin/python benchmarks/app_walk.py --repo /tmp/before --home /tmp/walk-home-before \\
        --out bench-results/walk/before [--only item1,item3] [--port 7871]

--repo is the checkout whose app runs: `python -m infinipot.app.cli ui` with this interpreter's packages and
`infinipot` imported from ROOT (a symlink on PYTHONPATH). --home is an INFINIPOT_HOME whose documents are already
read, so the walk does not wait for reading; pass a copy, since the walk uploads, asks and deletes there through the
app. Item 10 (the first screen) runs first, on an empty home of its own. --only picks items by number ("item1",
"item01" or "1"). Needs /usr/bin/chromium and /usr/bin/chromedriver.

Screenshots are OUT/itemNN-*.png at a 1400x1000 viewport (full-page ones are as tall as the page); OUT/walk.log
says what each one shows, with the texts the walk read on the page. A step that fails (a selector that changed, a
wait that ran out) is logged there and the walk goes on; walk.log is appended to, so a rerun of one item adds to it.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
VIEWPORT = (1400, 1000)  # the size issue 33 was seen at
DOCS = Path(__file__).resolve().parents[1] / "bench-results" / "devset-docs"
PDF = "libtasn1.pdf"
OTHER_PDF = "shared-mime-info-spec.pdf"
STORY = "story.txt"
STORY_PART = "story-walk.txt"  # the first two fifths of story.txt, read by the app in item 6
LICENSE_QUESTION = "Under which license is this manual distributed?"
STOP_QUESTIONS = ("What is ASN.1?", "Which function decodes a DER structure?", "What does asn1_create_element do?")
WAIT_QUESTION = "How do I parse a DER file?"
ACROSS_QUESTION = "What does each of these documents describe?"
ANSWERED = ("Sources:", "Closest passages:")  # the line under a complete answer
STREAMING = "Loading content"  # Gradio's placeholder in a bubble still being written
# The paper's words that issue 33 item 2 finds on the page.
RESEARCH_WORDS = re.compile(r"\b(?:pots?|CaP(?:-Q)?|NuC|KV heads?|catalyst|entries)\b|\|[MC]\|", re.IGNORECASE)
NOTE = (
    "Harbour notes, spring.\n\n"
    "The north pier was painted in March. The crew used a grey paint that dries in two hours, and the work took "
    "four days because of the rain.\n\n"
    "The ferry timetable changes on the first of May: boats leave at 7:40, 12:10 and 17:30, and the last boat on "
    "Sundays leaves at 16:00.\n\n"
    "The harbour office is open from nine to five. Questions about moorings go to the harbour master, Ines Varga.\n"
)
ANSWER_SECONDS = 300  # an answer on a 2-core machine with the bundled model: ~10-30 s, more behind another one
READ_SECONDS = 300


class Log:
    """walk.log: what each screenshot shows, the texts read on the page, and every step that failed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.started = time.monotonic()
        self.failures: list[str] = []

    def line(self, text: str) -> None:
        stamped = f"[{time.monotonic() - self.started:7.1f} s] {text}"
        print(stamped, flush=True)
        with self.path.open("a", encoding="utf-8") as log:
            log.write(stamped + "\n")

    def text(self, label: str, text: str, limit: int = 2000) -> None:
        """A text read on the page, on one line."""
        flat = " | ".join(line.strip() for line in text.splitlines() if line.strip())
        self.line(f"    {label}: {flat[:limit]}{'…' if len(flat) > limit else ''}")

    def failed(self, what: str, exc: BaseException) -> None:
        message = f"{what}: {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        self.failures.append(message)
        self.line(f"FAILED {message}")


def wait_for(check: Callable, what: str, timeout: float, every: float = 0.25):
    """check()'s first truthy value; a page still rendering (a stale or missing element) counts as not yet."""
    end = time.monotonic() + timeout
    while True:
        with contextlib.suppress(WebDriverException, StopIteration, IndexError):
            if value := check():
                return value
        if time.monotonic() > end:
            raise TimeoutError(f"{what}: not within {timeout:g} s")
        time.sleep(every)


def wait_stable(read: Callable[[], str], done: Callable[[str], bool], what: str, settle: float, timeout: float) -> str:
    """read()'s value once done(value) holds and it has not changed for `settle` seconds."""
    end = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < end:
        with contextlib.suppress(WebDriverException):
            value = read()
            if value != last:
                last, since = value, time.monotonic()
            elif done(value) and time.monotonic() - since >= settle:
                return value
        time.sleep(0.25)
    raise TimeoutError(f"{what}: not settled within {timeout:g} s")


def package_path(repo: Path, folder: Path) -> Path:
    """A PYTHONPATH folder where `import infinipot` is ROOT (its subpackages map to ROOT's folders), checked."""
    folder.mkdir()
    (folder / "infinipot").symlink_to(repo.resolve(), target_is_directory=True)
    probe = "import importlib; print(importlib.import_module('infinipot.app.cli.main').__file__)"
    env = {**os.environ, "PYTHONPATH": str(folder)}
    run = subprocess.run([sys.executable, "-c", probe], env=env, cwd=folder, capture_output=True, text=True)
    found = run.stdout.strip()
    if run.returncode or not Path(found).resolve().is_relative_to(repo.resolve()):
        raise RuntimeError(f"infinipot does not import from {repo}: {found or run.stderr.strip()}")
    return folder


def answering(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def app_server(pythonpath: Path, home: Path, port: int, log_file: Path) -> Iterator[str]:
    """The app of the checkout on PYTHONPATH, serving `home` on loopback; its output goes to log_file."""
    url = f"http://127.0.0.1:{port}/"
    if answering(url):
        raise RuntimeError(f"port {port} is already in use")
    command = [sys.executable, "-m", "infinipot.app.cli", "ui", "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "INFINIPOT_HOME": str(home), "PYTHONPATH": str(pythonpath)}
    with log_file.open("ab") as sink:
        server = subprocess.Popen(command, env=env, cwd=pythonpath, stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: server.poll() is not None or answering(url), "the app to start", 180, every=1)
        if server.poll() is not None:
            raise RuntimeError(f"the app exited with {server.returncode}; see {log_file}")
        yield url
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@contextlib.contextmanager
def chromium(profile: Path) -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        width, height = driver.execute_script("return [window.innerWidth, window.innerHeight]")
        driver.set_window_size(2 * VIEWPORT[0] - width, 2 * VIEWPORT[1] - height)  # the viewport, not the window
        yield driver
    finally:
        driver.quit()


class Walk:
    """The browser on the app: finding, clicking, waiting, screenshots and the log."""

    def __init__(self, driver: webdriver.Chrome, url: str, out: Path, log: Log, scratch: Path) -> None:
        self.driver = driver
        self.url = url
        self.out = out
        self.log = log
        self.scratch = scratch  # files to upload are written here

    @contextlib.contextmanager
    def step(self, what: str) -> Iterator[None]:
        """A step whose failure is logged; the walk goes on after it."""
        self.log.line(f"-- {what}")
        try:
            yield
        except Exception as exc:  # any failure: logged, and the next step runs
            self.log.failed(what, exc)

    # -- the page ----------------------------------------------------------------------------------
    def open(self) -> None:
        self.driver.get(self.url)
        wait_for(lambda: self.find("#ip-document input"), "the page", 120)
        wait_for(lambda: self.find("#ip-library").text.strip(), "the library table", 60)
        time.sleep(2)  # the load event fills the library and chooses a document

    def find(self, css: str):
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def text(self, css: str) -> str:
        return self.find(css).text

    def scroll_to(self, css: str) -> None:
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", self.find(css))
        time.sleep(0.5)

    def scroll_top(self) -> None:
        self.driver.execute_script("window.scrollTo(0, 0)")
        time.sleep(0.5)

    def click(self, css: str) -> float:
        """Click the element; returns when, for timed screenshots."""
        self.find(css).click()
        return time.monotonic()

    def press(self, label: str, timeout: float = 30) -> None:
        """Click the visible button whose text starts with `label` (case-insensitive), once it is enabled."""
        wanted = label.lower()

        def button():
            buttons = self.driver.find_elements(By.TAG_NAME, "button")
            return next(b for b in buttons if b.is_displayed() and b.text.strip().lower().startswith(wanted))

        wait_for(lambda: button().is_enabled(), f"the button {label!r} enabled", timeout)
        button().click()

    def open_tab(self, name: str) -> None:
        """The tab whose name starts with `name` (case-insensitive): names may change a little."""
        tabs = self.driver.find_elements(By.CSS_SELECTOR, "button[role='tab']")
        tab = next((t for t in tabs if t.text.strip().lower().startswith(name.lower())), None)
        if tab is None:
            raise LookupError(f"no tab {name!r}; the tabs: {[t.text.strip() for t in tabs]}")
        self.scroll_top()
        tab.click()
        time.sleep(1.5)

    def pick_option(self, field_css: str, name: str) -> None:
        """Type `name` into a dropdown and click the option that holds it (the last one: the newest document
        when several have the name)."""
        field = self.find(field_css)
        field.click()
        field.send_keys(Keys.CONTROL, "a")
        field.send_keys(name)
        options = lambda: self.driver.find_elements(By.CSS_SELECTOR, "[role='option']")  # noqa: E731
        option = wait_for(lambda: [o for o in options() if o.is_displayed() and name in o.text][-1], name, 15)
        option.click()

    def choose(self, name: str) -> None:
        """The document `name` in the Document dropdown (nothing happens when it is the chosen one already)."""
        if name in self.find("#ip-document input").get_attribute("value"):
            return
        self.pick_option("#ip-document input", name)
        wait_for(lambda: name in self.find("#ip-document input").get_attribute("value"), f"{name} chosen", 15)
        time.sleep(2)  # the chat and the kept view follow the choice

    def chat_about(self, name: str, new: bool = True) -> None:
        """The Chat tab of document `name`, a new conversation unless new=False, the page at its top."""
        self.choose(name)
        self.open_tab("Chat")
        if new:
            self.press("New chat")
            time.sleep(1.5)
        self.scroll_top()

    def upload(self, path: Path) -> None:
        self.open_tab("Library")
        self.find("#ip-upload input[type='file']").send_keys(str(path))

    def library_rows(self) -> list[str]:
        """The library table's rows, each its cells joined by ' | ' (the table draws its rows only while the
        Library tab is shown)."""
        return self.driver.execute_script(
            """
            return [...document.querySelectorAll('#ip-library [role=row]')]
              .map(row => [...row.querySelectorAll('[role=gridcell]')].map(cell => cell.textContent.trim()))
              .filter(cells => cells.length).map(cells => cells.join(' | '));
            """
        )

    def library_row(self, name: str) -> str:
        """The library table's row of document `name`, the newest when several have the name ('' when none)."""
        return next((row for row in reversed(self.library_rows()) if row.startswith(f"{name} |")), "")

    def chat(self) -> str:
        return self.text("#ip-chat")

    def busy(self, css: str) -> bool:
        """Whether the component's Gradio status tracker shows an event running (queued, processing, streaming);
        one that shows an error is not."""
        return self.driver.execute_script(
            "const t = document.querySelector(arguments[0] + ' [data-testid=status-tracker]');"
            "return !!t && !t.classList.contains('hide') && !t.querySelector('.error');",
            css,
        )

    def answer_to(self, question: str) -> str:
        """The chat after the last time `question` was asked in it ('' before it shows)."""
        text = self.chat()
        return text.rsplit(question, 1)[1].replace(STREAMING, "").strip() if question in text else ""

    def ask(self, question: str) -> float:
        box = self.find("#ip-question textarea")
        box.click()
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(question)
        return self.click("#ip-ask")

    def wait_answer(self, question: str) -> str:
        """The answer once complete: its Sources line shows and the chat has not changed for 5 s."""
        return wait_stable(
            lambda: self.answer_to(question),
            lambda answer: any(line in answer for line in ANSWERED) and not self.busy("#ip-chat"),
            f"the answer to {question!r}",
            settle=5,
            timeout=ANSWER_SECONDS,
        )

    def settle_chat(self) -> None:
        """Wait until nothing more is written into the chat (after a Stop), so the next question starts clean. A
        chat whose status tracker still shows an event running a minute later is logged, and the walk goes on once
        its text has settled."""
        try:
            wait_stable(self.chat, lambda _: not self.busy("#ip-chat"), "the chat", settle=4, timeout=60)
        except TimeoutError:
            self.log.line("    the chat still shows an event running (its status tracker) 60 s later")
            wait_stable(self.chat, lambda _: True, "the chat", settle=4, timeout=ANSWER_SECONDS)

    # -- what is on the page -----------------------------------------------------------------------
    def texts_shown(self, pattern: str) -> list[str]:
        """Visible elements whose own text matches the JavaScript regex `pattern`, each with the component (or
        toast) it is in and that one's text."""
        return self.driver.execute_script(
            """
            const found = [], pattern = new RegExp(arguments[0]);
            for (const el of document.querySelectorAll('body *')) {
              const own = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join(' ').trim();
              if (pattern.test(own) && el.getClientRects().length) {
                const box = el.closest('.toast-body, .block, [id]');
                const where = box ? (box.id || box.className) : '';
                const inside = (box ? box.innerText : '').replace(/\s+/g, ' ').slice(0, 200);
                found.push(`${own.slice(0, 120)} (in ${where}: ${inside})`);
              }
            }
            return found;
            """,
            pattern,
        )

    def log_errors(self) -> None:
        """Gradio's red 'Error' badges and toasts on the page."""
        errors = self.texts_shown(r"^Error\b")
        self.log.line(f"    'Error' visible on the page: {'; '.join(errors) if errors else 'none'}")

    def in_view(self, css: str) -> str:
        """Whether the element is in the viewport: 'in view', 'partly in view', 'below the fold', 'missing'."""
        return self.driver.execute_script(
            """
            const el = document.querySelector(arguments[0]);
            if (!el || !el.getClientRects().length) return 'missing or hidden';
            const r = el.getBoundingClientRect(), h = window.innerHeight;
            if (r.height < 1) return `empty (0 px high, at y ${Math.round(r.top)}; viewport ${h})`;
            if (r.top >= 0 && r.bottom <= h) return `in view (y ${Math.round(r.top)}-${Math.round(r.bottom)})`;
            if (r.top >= h) return `below the fold (starts at y ${Math.round(r.top)}, viewport ${h})`;
            if (r.bottom <= 0) return 'above the viewport';
            return `partly in view (y ${Math.round(r.top)}-${Math.round(r.bottom)}, viewport ${h})`;
            """,
            css,
        )

    def log_view(self, *selectors: str) -> None:
        for css in selectors:
            self.log.line(f"    {css}: {self.in_view(css)}")

    def log_text(self, label: str, css: str) -> None:
        found = self.driver.find_elements(By.CSS_SELECTOR, css)
        self.log.text(label, found[0].text if found else f"(no {css} on the page)")

    # -- screenshots -------------------------------------------------------------------------------
    def shot(self, name: str, what: str, full: bool = False) -> None:
        """OUT/name.png: the viewport, or the whole page (full=True)."""
        png = self.full_page() if full else self.driver.get_screenshot_as_png()
        (self.out / f"{name}.png").write_bytes(png)
        self.log.line(f"{name}.png: {what}{' (full page)' if full else ' (viewport)'}")

    def element_shot(self, css: str, name: str, what: str) -> None:
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", self.find(css))
        time.sleep(0.5)
        (self.out / f"{name}.png").write_bytes(self.find(css).screenshot_as_png)
        self.log.line(f"{name}.png: {what} (the element {css})")

    def full_page(self) -> bytes:
        size = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.driver.execute_cdp_cmd(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
        )
        return base64.b64decode(shot["data"])


# -- the items (ITEMS, below them, gives the order of the walk) ----------------------------------------------------


def item10_first_screen(walk: Walk) -> None:
    """The first screen on an empty home, and the Chat tab with no document."""
    walk.scroll_top()
    walk.shot("item10-first-screen", "the page as it loads on an empty home (no documents)")
    walk.log.text("first screen text", walk.driver.find_element(By.TAG_NAME, "body").text)
    walk.open_tab("Chat")
    walk.shot("item10-chat-no-document", "the Chat tab with no document")
    walk.log.text("Chat tab text", walk.driver.find_element(By.TAG_NAME, "body").text)
    keys = walk.texts_shown(r"^common\.")
    walk.log.line(f"    Gradio's untranslated keys on the page: {'; '.join(keys) if keys else 'none'}")


def item02_research_words(walk: Walk) -> None:
    """Each tab with libtasn1.pdf chosen, and the paper's words found on it."""
    walk.choose(PDF)
    for tab, name in (
        ("Library", "library"),
        ("Chat", "chat"),
        ("Settings", "settings"),
        ("What the model kept", "kept"),
    ):
        with walk.step(f"item 2: the {tab} tab"):
            walk.open_tab(tab)
            if name == "kept":
                wait_for(lambda: walk.text("#ip-tokens").strip(), "the kept tokens", 60)
            time.sleep(1)
            walk.shot(f"item02-{name}-tab", f"the {tab} tab, {PDF} chosen: the paper's words in its labels", True)
            log_research_words(walk, tab)


def log_research_words(walk: Walk, tab: str) -> None:
    body = walk.driver.find_element(By.TAG_NAME, "body").text
    lines = [line.strip() for line in body.splitlines() if RESEARCH_WORDS.search(line)]
    counts: dict[str, int] = {}
    for line in lines:
        for word in RESEARCH_WORDS.findall(line):
            counts[word] = counts.get(word, 0) + 1
    walk.log.line(f"    {tab}: research words {counts}")
    for line in lines:
        walk.log.line(f"      > {line[:300]}")


def item08_plots(walk: Walk) -> None:
    """'What the model kept' for libtasn1.pdf: the retention map and both memory plots."""
    kept_view(walk, PDF, "item08-libtasn1")
    walk.open_tab("Library")
    if walk.library_row(STORY_PART):  # read by the app in item 6, so its memory was sampled
        kept_view(walk, STORY_PART, "item08-story-walk")
    else:
        walk.log.line(f"    {STORY_PART} is not in the library (item 6 reads it): no plots of a read by the app")


def kept_view(walk: Walk, name: str, prefix: str) -> None:
    walk.choose(name)
    walk.open_tab("What the model kept")
    wait_for(lambda: walk.find(".ip-retention").is_displayed(), "the retention map", 60)
    wait_for(lambda: plots_or_none(walk), "the plots, or the caption saying there are none", 60)
    time.sleep(2)  # the plots draw after their data arrives
    walk.scroll_to(".ip-retention")
    walk.driver.execute_script("window.scrollBy(0, -60)")  # its heading too
    walk.shot(f"{prefix}-retention-map", f"the retention map of {name}: its axes, ticks and colour scale")
    walk.log_text("retention map axis and scale", ".ip-retention")
    memory = walk.driver.find_element(By.XPATH, "//*[self::h1 or self::h2 or self::h3][contains(., 'Memory')]")
    walk.driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", memory)
    time.sleep(0.5)
    walk.shot(f"{prefix}-memory-plots", f"the two memory plots of {name}: legends, axis titles and scales")
    walk.shot(f"{prefix}-kept-tab", f"the whole 'What the model kept' tab of {name}", full=True)
    walk.log_text("legend", ".ip-legend")
    body = walk.driver.find_element(By.TAG_NAME, "body").text.splitlines()
    captions = [line for line in body if "whole memory" in line or "no record of" in line]
    walk.log.text("memory caption", " ".join(captions) or "(not found)")


def plots_or_none(walk: Walk) -> bool:
    """Both memory plots drawn, or the caption of a read without samples (the plots are hidden since issue 33)."""
    if len(walk.driver.find_elements(By.CSS_SELECTOR, "canvas, svg.marks")) >= 2:
        return True
    return "no record of memory" in walk.driver.find_element(By.TAG_NAME, "body").text


def item04_sources(walk: Walk) -> None:
    """A complete answer with its Sources line and quotes, then what its first source opens."""
    walk.chat_about(PDF)
    walk.ask(LICENSE_QUESTION)
    answer = walk.wait_answer(LICENSE_QUESTION)
    walk.log.text("answer", answer, limit=4000)
    walk.element_shot("#ip-chat", "item04-answer", "the complete answer as the chat box shows it")
    with expanded_chat(walk):
        walk.element_shot("#ip-chat", "item04-answer-whole", "the whole conversation: answer, Sources line, quotes")
    source = first_source(walk)
    label = source.text.strip()
    walk.log.line(f"    clicking the first source: {label!r}")
    walk.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", source)
    source.click()
    wait_for(lambda: "starts at" in walk.driver.find_element(By.TAG_NAME, "body").text, "the cited place", 120)
    time.sleep(2)
    walk.shot("item04-source-opened", f"what clicking the source {label!r} opens", full=True)
    walk.log.text("opened at", walk.driver.find_element(By.XPATH, "//*[contains(text(), 'starts at')]").text)


def first_source(walk: Walk):
    """The first source button under the latest answer ('page 2 (41%)', 'page 2', 'line 12')."""
    pattern = re.compile(r"(page|line|section|part)\s*\d+.*", re.IGNORECASE)
    buttons = lambda: walk.driver.find_elements(By.CSS_SELECTOR, "#ip-chat button")  # noqa: E731
    return wait_for(lambda: next(b for b in buttons() if pattern.fullmatch(b.text.strip())), "a source button", 30)


@contextlib.contextmanager
def expanded_chat(walk: Walk) -> Iterator[None]:
    """The chat box as tall as its conversation, for one screenshot; its fixed height afterwards."""
    script = """
        const chat = document.querySelector('#ip-chat');
        for (const el of [chat, ...chat.querySelectorAll('*')]) {
          if (arguments[0]) { el.dataset.walkStyle = el.getAttribute('style') || '';
            if (el === chat || el.scrollHeight > el.clientHeight + 1) {
              el.style.height = 'auto'; el.style.maxHeight = 'none'; el.style.overflow = 'visible'; } }
          else if ('walkStyle' in el.dataset) { el.setAttribute('style', el.dataset.walkStyle);
            delete el.dataset.walkStyle; }
        }
    """
    walk.driver.execute_script(script, True)
    time.sleep(0.5)
    try:
        yield
    finally:
        walk.driver.execute_script(script, False)


def item09_layout(walk: Walk) -> None:
    """The library table's header, the chat's toolbar over its first bubble, and 'Ask across documents'."""
    with walk.step("item 9: the library table"):
        walk.choose(PDF)
        walk.open_tab("Library")
        walk.element_shot("#ip-library", "item09-library-table", "the library table: its header ('Pages')")
        walk.log_text("table header", "#ip-library thead")
    with walk.step("item 9: the chat's toolbar"):
        walk.chat_about(PDF, new=False)
        if not any(line in walk.chat() for line in ANSWERED):
            walk.ask(LICENSE_QUESTION)
            walk.wait_answer(LICENSE_QUESTION)
        scroll_chat_to_top(walk)
        walk.element_shot("#ip-chat", "item09-chat-toolbar", "the chat with an answer: its icons over the first bubble")
        walk.log.line(f"    toolbar vs first bubble: {toolbar_overlap(walk)}")
    with walk.step("item 9: ask across documents"):
        walk.chat_about(PDF, new=False)
        for name in (PDF, OTHER_PDF):
            walk.pick_option("#ip-across-docs input", name)
            time.sleep(0.5)
        walk.find("#ip-question textarea").send_keys(ACROSS_QUESTION)
        walk.click("#ip-ask-across")
        walk.log.text("answer across documents", across_answer(walk))
        walk.shot("item09-ask-across", f"the Chat tab after 'Ask across documents' with {PDF} and {OTHER_PDF}", True)


def across_answer(walk: Walk) -> str:
    """The complete answer across documents, in its own box (#ip-across-answer) or, where the app writes it
    there, in the chat."""
    if walk.driver.find_elements(By.CSS_SELECTOR, "#ip-across-answer"):
        box, read = "#ip-across-answer", lambda: walk.text("#ip-across-answer")
    else:
        box, read = "#ip-chat", lambda: walk.answer_to(ACROSS_QUESTION)
    done = lambda text: bool(text) and not walk.busy(box)  # noqa: E731
    return wait_stable(read, done, "the answer across documents", settle=2, timeout=ANSWER_SECONDS)


def scroll_chat_to_top(walk: Walk) -> None:
    walk.driver.execute_script("for (const el of document.querySelectorAll('#ip-chat, #ip-chat *')) el.scrollTop = 0;")
    time.sleep(0.5)


def toolbar_overlap(walk: Walk) -> str:
    """Where the chat's icon buttons are against its first message bubble, in pixels."""
    return walk.driver.execute_script(
        """
        const chat = document.querySelector('#ip-chat');
        const bar = chat.querySelector('.top-panel, .icon-button-wrapper');
        const bubble = chat.querySelector('.message-row .message, [data-testid="user"], [data-testid="bot"]');
        if (!bar || !bubble) return `toolbar ${!!bar}, first bubble ${!!bubble}`;
        const a = bar.getBoundingClientRect(), b = bubble.getBoundingClientRect();
        const overlap = a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
        const px = Math.round;
        const box = r => `x ${px(r.left)}-${px(r.right)}, y ${px(r.top)}-${px(r.bottom)}`;
        return `${overlap ? 'OVERLAP' : 'no overlap'}: toolbar ${box(a)}; first bubble ${box(b)}`;
        """
    )


def item03_long_waits(walk: Walk) -> None:
    """What a user sees while a New summary is written (3 s, 20 s) and 1 s after asking."""
    with walk.step("item 3: New summary"):
        walk.chat_about(PDF)
        start = walk.click("#ip-new-summary")
        for seconds in (3, 20):
            time.sleep(max(0.0, start + seconds - time.monotonic()))
            walk.shot(f"item03-summary-{seconds}s", f"{seconds} s after pressing New summary: what is in view")
            walk.log_view("#ip-summary-status", "#ip-chat", "#ip-question")
            walk.log_text("summary status", "#ip-summary-status")
            walk.log.text("chat's end", walk.chat()[-300:])
        walk.click("#ip-stop")  # the rest of the summary is not needed; item 1 looks at what Stop shows
        walk.settle_chat()
    with walk.step("item 3: a question"):
        walk.chat_about(PDF)
        start = walk.ask(WAIT_QUESTION)
        time.sleep(max(0.0, start + 1 - time.monotonic()))
        walk.shot("item03-ask-1s", "1 s after pressing Ask: what is in view")
        walk.log_view("#ip-chat", "#ip-question")
        walk.log.text("chat", walk.chat()[-300:])
        walk.wait_answer(WAIT_QUESTION)


def item01_stop(walk: Walk) -> None:
    """Stop pressed at three moments of an answer and 5 s into a New summary."""
    moments = (
        ("0.3s", "0.3 s after Ask", lambda question: time.sleep(0.3)),
        ("first-words", "once the first words show", lambda question: first_words(walk, question)),
        ("sources", "as the Sources line shows", lambda question: sources_shown(walk, question)),
    )
    for (name, when, moment), question in zip(moments, STOP_QUESTIONS, strict=True):
        with walk.step(f"item 1: Stop {when}"):
            walk.open()  # a Stop's leftovers (an error over the question box) would block the next question
            walk.chat_about(PDF)
            walk.ask(question)
            moment(question)
            stop_and_shoot(walk, f"item01-stop-{name}", f"3 s after Stop pressed {when} ({question!r})")
    with walk.step("item 1: Stop 5 s into a New summary"):
        walk.open()
        walk.chat_about(PDF)
        start = walk.click("#ip-new-summary")
        time.sleep(max(0.0, start + 5 - time.monotonic()))
        stop_and_shoot(walk, "item01-stop-summary", "3 s after Stop pressed 5 s into a New summary")


def first_words(walk: Walk, question: str) -> None:
    wait_for(lambda: walk.answer_to(question), "the answer's first words", ANSWER_SECONDS, every=0.1)


def sources_shown(walk: Walk, question: str) -> None:
    answer = lambda: walk.answer_to(question)  # noqa: E731
    wait_for(lambda: any(line in answer() for line in ANSWERED), "the Sources line", ANSWER_SECONDS, every=0.1)


def stop_and_shoot(walk: Walk, name: str, what: str) -> None:
    walk.click("#ip-stop")
    time.sleep(3)
    walk.shot(name, f"{what}: the chat and the question box")
    walk.log_errors()
    walk.log.text("chat's end", walk.chat()[-400:])
    walk.settle_chat()


def item05_duplicate(walk: Walk) -> None:
    """A copy of libtasn1.pdf under another name: what the library and its notice say."""
    copy = walk.scratch / "libtasn1-copy.pdf"
    shutil.copyfile(DOCS / PDF, copy)
    walk.upload(copy)
    wait_for(lambda: copy.name in walk.text("#ip-notice"), "the upload notice", 60)
    wait_stable(lambda: walk.text("#ip-library") + walk.text("#ip-progress"), bool, "the library", 5, 60)
    walk.shot("item05-duplicate-upload", f"the Library tab after uploading a copy of {PDF} as {copy.name}", True)
    walk.log_text("notice", "#ip-notice")
    walk.log_text("progress", "#ip-progress")
    for row in walk.library_rows():
        walk.log.line(f"    row: {row}")
    walk.log.line(f"    Document: {walk.find('#ip-document input').get_attribute('value')!r}")


def item07_errors(walk: Walk) -> None:
    """5000 random bytes named bad.pdf: the notice."""
    bad = walk.scratch / "bad.pdf"
    bad.write_bytes(random.Random(33).randbytes(5000))
    walk.upload(bad)
    wait_for(lambda: bad.name in walk.text("#ip-notice"), "the notice about bad.pdf", 60)
    time.sleep(2)
    walk.scroll_top()
    walk.shot("item07-bad-pdf", "the Library tab after uploading 5000 random bytes named bad.pdf")
    walk.log_text("notice", "#ip-notice")
    walk.log_errors()


def item06_state_glitches(walk: Walk) -> None:
    """The Document selector after a delete, and the library while a larger file is read, cancelled, resumed."""
    with walk.step("item 6: delete a small document"):
        delete_a_note(walk)
    with walk.step("item 6: a larger file read, cancelled and resumed"):
        read_cancel_resume(walk)


def delete_a_note(walk: Walk) -> None:
    note = walk.scratch / "harbour-note.txt"
    note.write_text(NOTE, encoding="utf-8")
    walk.upload(note)
    wait_for(lambda: "ready" in walk.library_row(note.name), f"{note.name} read", READ_SECONDS, every=1)
    walk.choose(note.name)
    walk.press("Delete document")
    wait_for(lambda: walk.find("#ip-confirm-delete").is_displayed(), "the confirming button", 15)
    walk.click("#ip-confirm-delete")
    time.sleep(3)
    walk.scroll_top()
    walk.shot("item06-after-delete", f"the Library tab after deleting {note.name}: the Document selector", True)
    walk.log.line(f"    Document selector: {walk.find('#ip-document input').get_attribute('value')!r}")
    walk.log_text("notice", "#ip-notice")
    walk.log_text("progress", "#ip-progress")


def read_cancel_resume(walk: Walk) -> None:
    """A part of story.txt (new content, so it is read: a same-content copy is not), ~7,500 tokens: a read of a
    minute or two on two cores."""
    text = (DOCS / STORY).read_text(encoding="utf-8")
    part = text[: len(text) * 2 // 5]
    story = walk.scratch / STORY_PART
    story.write_text(part[: part.rfind("\n\n")] + "\n\n(The first chapters, for the app walk.)\n", encoding="utf-8")
    walk.upload(story)
    wait_for(lambda: "reading" in walk.text("#ip-progress"), f"{story.name} reading", 120)
    reading_shot(walk, story.name, "item06-reading-1", "while it is read")
    time.sleep(5)
    reading_shot(walk, story.name, "item06-reading-2", "5 s later, still read")
    walk.press("Cancel reading")
    time.sleep(3)
    reading_shot(walk, story.name, "item06-cancelled", "3 s after Cancel reading")
    walk.log_text("notice", "#ip-notice")
    if "cancelled" not in walk.text("#ip-progress"):  # the read stops after its current chunk
        wait_for(lambda: "cancelled" in walk.text("#ip-progress"), f"{story.name} cancelled", 120)
        reading_shot(walk, story.name, "item06-cancelled-later", "once the cancel took effect")
    walk.press("Resume")
    try:
        wait_for(lambda: "ready" in walk.text("#ip-progress"), f"{story.name} ready", READ_SECONDS, every=1)
        outcome = "once it is read"
    except TimeoutError:
        outcome = f"still not read {READ_SECONDS} s after Resume"
        walk.log.line(f"    {story.name} {outcome}")
    reading_shot(walk, story.name, "item06-resumed", f"after Resume, {outcome}")


def reading_shot(walk: Walk, name: str, shot: str, when: str) -> None:
    """The progress line, the buttons and the library table (its row of `name` and the progress in the log)."""
    walk.scroll_to("#ip-progress")
    walk.shot(shot, f"the progress line and the library table with {name}, {when}")
    walk.log.line(f"    row: {walk.library_row(name)}")
    walk.log_text("progress", "#ip-progress")


# -- issue 34: a whole library -------------------------------------------------------------------------------------
LIBRARY_FOLDER = Path("/usr/share/common-licenses")  # real documents every Debian machine has
LIBRARY_FILES = (
    "Apache-2.0",
    "Artistic",
    "BSD",
    "CC0-1.0",
    "GPL-1",
    "GPL-2",
    "LGPL-2.1",
    "LGPL-3",
    "MPL-1.1",
    "MPL-2.0",
)
LIBRARY_QUESTION = "Which version of the Mozilla Public License is this?"


def item11_folder(walk: Walk) -> None:
    """A folder of 10 files added at once ("Add a whole folder"): the library's progress line while they are read."""
    folder = walk.scratch / "licenses"
    folder.mkdir(exist_ok=True)
    for name in LIBRARY_FILES:
        shutil.copyfile(LIBRARY_FOLDER / name, folder / f"{name}.txt")
    walk.open_tab("Library")
    # The folder button's file input is Gradio's, beside the button: the one input that takes folders.
    walk.find("input[type='file'][webkitdirectory]").send_keys(str(folder))
    wait_for(lambda: "Library:" in walk.text("#ip-progress"), "the library's progress line", 120)
    walk.shot("item11-folder-queued", "the Library tab just after a folder of 10 licence texts was added", True)
    walk.log_text("notice", "#ip-notice")
    walk.log_text("progress", "#ip-progress")
    wait_for(lambda: re.search(r"Library: [3-9] of 10", walk.text("#ip-progress")), "three documents done", 1800, 5)
    walk.shot("item11-folder-reading", "the library's progress line with some of the 10 documents read", True)
    walk.log_text("progress", "#ip-progress")
    wait_for(lambda: "Library: 10 of 10" in walk.text("#ip-progress"), "all ten read", 3600, 5)
    walk.shot("item11-folder-done", "the library once the 10 documents are read", True)
    walk.log_text("progress", "#ip-progress")


def item12_all_documents(walk: Walk) -> None:
    """A question to "All documents", answered in the chat with the document of each source."""
    walk.pick_option("#ip-document input", "All documents")
    wait_for(lambda: "All documents" in walk.find("#ip-document input").get_attribute("value"), "All documents", 15)
    time.sleep(2)
    walk.open_tab("Chat")
    walk.scroll_top()
    walk.ask(LIBRARY_QUESTION)
    answer = walk.wait_answer(LIBRARY_QUESTION)
    walk.log.text("answer", answer, limit=4000)
    with expanded_chat(walk):
        walk.element_shot("#ip-chat", "item12-all-documents", "the answer of All documents, its sources named")
    open_from_chat(
        walk,
        lambda text: ", " in text,
        "a source button naming its document",
        "item12-source-opened",
        "what the source of an All documents answer opens",
    )


def open_from_chat(walk: Walk, matches, what: str, shot: str, caption: str, timeout: float = 30) -> None:
    """Click the chat's first button whose text `matches` (a source, an outline's part), wait for the document to
    open at its place and take a screenshot of the page."""
    button = wait_for(
        lambda: next(b for b in walk.driver.find_elements(By.CSS_SELECTOR, "#ip-chat button") if matches(b.text)),
        what,
        timeout,
    )
    walk.log.line(f"    clicking {what}: {button.text.strip()!r}")
    walk.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
    button.click()
    wait_for(lambda: "starts at" in walk.driver.find_element(By.TAG_NAME, "body").text, "the place it opens", 120)
    time.sleep(2)
    walk.shot(shot, caption, full=True)


FOLLOW_UP = "What version of it?"
HEADER_QUESTION = "What is the name of the library's header file?"


def item13_trusted_answers(walk: Walk) -> None:
    """Issue 32's chat on libtasn1.pdf: the license question, its follow-up, a question the manual answers, and
    "Summarize this file", each answer with its first quote."""
    chat_in_turns(
        walk, PDF, (LICENSE_QUESTION, FOLLOW_UP, HEADER_QUESTION), "item13-chat",
        "the three answers in one conversation, each with its quote",
    )  # fmt: skip
    walk.press("Summarize this file")
    summary = wait_stable(
        walk.chat,
        lambda text: "Outline" in text and not walk.busy("#ip-chat"),
        "the summary",
        settle=5,
        timeout=ANSWER_SECONDS,
    )
    walk.log.text("summary", summary.rsplit(HEADER_QUESTION, 1)[-1], limit=4000)
    with expanded_chat(walk):
        walk.element_shot("#ip-chat", "item13-summary", "the summary after the answers")


LOG = "orders-platform.log"
LOG_QUESTIONS = ("Which card processor timed out?", "After how many milliseconds?")


def item14_log_follow_up(walk: Walk) -> None:
    """Issue 32's follow-up on a log: which processor timed out, then "After how many milliseconds?", each answered
    with a whole log line (from its timestamp) and its quote."""
    chat_in_turns(
        walk, LOG, LOG_QUESTIONS, "item14-log-chat", "the log question and its follow-up, each with its quote"
    )


def chat_in_turns(walk: Walk, name: str, questions: tuple[str, ...], shot: str, caption: str) -> None:
    """Ask `questions` in turn in one chat about `name` (uploaded first if the home lacks it), log each answer and
    take one screenshot of the conversation."""
    ensure_document(walk, name)
    walk.chat_about(name)
    for number, question in enumerate(questions, start=1):
        walk.ask(question)
        answer = walk.wait_answer(question)
        walk.log.text(f"answer {number}", answer, limit=4000)
    with expanded_chat(walk):
        walk.element_shot("#ip-chat", shot, caption)


STORY = "story.txt"
STORY_QUESTIONS = ("How high is Mount Aster?", "Whom did Elena meet at the foot of it?")


def item15_follow_up_after_not_found(walk: Walk) -> None:
    """Issue 32's follow-up after an answer that found nothing: "How high is Mount Aster?" (not found, though the
    story says 1,206 metres in a sentence that does not name the mountain), then "Whom did Elena meet at the foot
    of it?", answered from the story with its quote."""
    caption = "a not-found answer and the follow-up answered after it"
    chat_in_turns(walk, STORY, STORY_QUESTIONS, "item15-story-chat", caption)


def item16_summary_outline(walk: Walk) -> None:
    """Issue 54: "Summarize this file" on libtasn1.pdf and on the development log, each with its outline; a part of
    the outline clicked opens the document at its place."""
    for name, shot in ((PDF, "item16-summary-pdf"), (LOG, "item16-summary-log")):
        walk.chat_about(name)
        walk.press("Summarize this file")
        summary = wait_stable(
            walk.chat,
            lambda text: ("Outline" in text or "Errors and warnings" in text) and not walk.busy("#ip-chat"),
            "the summary",
            settle=3,
            timeout=ANSWER_SECONDS,
        )
        walk.log.text(f"summary of {name}", summary, limit=6000)
        with expanded_chat(walk):
            walk.element_shot("#ip-chat", shot, f"the summary of {name} with its outline to click")
    walk.chat_about(PDF)
    walk.press("Summarize this file")  # the stored one, at once
    open_from_chat(
        walk,
        lambda text: "Utilities" in text,
        "the outline's part 3 Utilities",
        "item16-part-opened",
        "what a part of the outline opens: the document at its place",
        timeout=120,
    )


# -- issue 55 item 4: six small things -----------------------------------------------------------------------------
CODING_QUESTION = "What does asn1Coding do?"
LOG_ONLY_QUESTION = "Which card processor timed out?"  # words only the log holds
# A note small enough for its pot to hold all of it: its passages by words (the index's scores) answer for it.
SMALL_NOTE = "harbour-note.txt"
# Words the note's alone ("moorings", "harbour", "boats"): one place cited, then several.
NOTE_QUESTIONS = ("Who takes questions about moorings?", "When do the boats leave, and who is the harbour master?")
FOOTBALL_QUESTION = "Who won the 1998 football world cup?"
NEW_READ = "GPL-3.txt"  # not in the walk's home: read by the app in step c
READ_MOMENTS = (1, 3, 10, 15, 30, 50)  # seconds after the upload, for the progress line
DOT_LEADERS = re.compile(r"(?:\.\s?){5,}")  # an index's or contents' dot leaders: "asn1_read_value ........ 23"


def item17_small_things(walk: Walk) -> None:
    """Issue 55 item 4: six small things, a to g.

    The Sources shares of All documents (a), the Document list (e), a not-found answer's passages (g), the Delete
    notice and the head control's label (d), the same file uploaded again (b), and a new read's progress line (c)
    with the Chat tab's buttons while it is read (f)."""
    for step, part in (
        ("e: the Document list opened", document_list),
        ("a: an All documents answer and its Sources shares", all_documents_shares),
        ("g: a not-found answer's closest passages", not_found_passages),
        ("d: the Delete notice, kept", delete_notice),
        ("d: the head control's label", head_label),
        ("b: the same file uploaded again", same_file_again),
        ("c and f: a new read's progress line, the Chat tab's buttons while it is read", new_read),
    ):
        with walk.step(f"item 17 {step}"):
            part(walk)


def document_list(walk: Walk) -> None:
    walk.open()
    walk.scroll_top()
    walk.find("#ip-document input").click()
    options = lambda: [o for o in walk.driver.find_elements(By.CSS_SELECTOR, "[role='option']") if o.is_displayed()]  # noqa: E731
    wait_for(options, "the Document list's options", 15)
    time.sleep(1)
    walk.shot("item17-e-document-list", "the Document selector's list opened: how each document is named")
    walk.log.line(f"    Document selector value: {walk.find('#ip-document input').get_attribute('value')!r}")
    walk.log.line(f"    options: {[o.text.strip() for o in options()]}")
    walk.find("#ip-document input").send_keys(Keys.ESCAPE)


def all_documents_shares(walk: Walk) -> None:
    """Two questions to All documents (the manual's, the log's); then a small note added, and a question only it
    answers (from its passages by words: the index's scores were shown as shares, "1305%")."""
    walk.open()
    ask_all_documents(walk, (CODING_QUESTION, LOG_ONLY_QUESTION))
    with expanded_chat(walk):
        walk.element_shot(
            "#ip-chat", "item17-a-all-documents-whole", "both All documents answers: their Sources lines and shares"
        )
    with walk.step(f"item 17 a: {SMALL_NOTE} added, a question only it answers"):
        note = walk.scratch / SMALL_NOTE
        note.write_text(NOTE, encoding="utf-8")
        walk.upload(note)
        wait_for(lambda: "ready" in walk.library_row(SMALL_NOTE), f"{SMALL_NOTE} read", READ_SECONDS, every=1)
        walk.log.line(f"    row: {walk.library_row(SMALL_NOTE)}")
        walk.open()
        ask_all_documents(walk, NOTE_QUESTIONS)
        with expanded_chat(walk):
            walk.element_shot("#ip-chat", "item17-a-all-documents-note", f"All documents answers from {SMALL_NOTE}")


def ask_all_documents(walk: Walk, questions: tuple[str, ...]) -> None:
    walk.pick_option("#ip-document input", "All documents")
    wait_for(lambda: "All documents" in walk.find("#ip-document input").get_attribute("value"), "All documents", 15)
    time.sleep(2)
    walk.open_tab("Chat")
    walk.scroll_top()
    for question in questions:
        walk.ask(question)
        answer = walk.wait_answer(question)
        walk.log.text(f"answer to {question!r}", answer, limit=4000)
        log_shares(walk, answer)


def log_shares(walk: Walk, answer: str) -> None:
    """The answer's Sources line, its shares (the % of each place), their sum and whether they fall after the
    first."""
    heads = ("Sources:", "Closest passages:")
    line = next((line.strip() for line in answer.splitlines() if line.strip().startswith(heads)), "")
    walk.log.text("Sources line", line or "(no Sources line)")
    places = line.split("(%:")[0].split(":", 1)[-1].split(" · ")
    shares = [int(share) for place in places for share in re.findall(r"\((\d+)%\)", place)]
    after_first = shares[1:]
    falling = all(a >= b for a, b in zip(after_first, after_first[1:], strict=False))
    walk.log.line(
        f"    shares: {shares}, sum {sum(shares)}%, any over 100%: {any(s > 100 for s in shares)}, "
        f"falling after the first: {falling}"
    )


def not_found_passages(walk: Walk) -> None:
    walk.open()
    walk.chat_about(PDF)
    walk.ask(FOOTBALL_QUESTION)
    answer = walk.wait_answer(FOOTBALL_QUESTION)
    walk.log.text("answer", answer, limit=4000)
    leaders = DOT_LEADERS.findall(answer)
    walk.log.line(f"    dot leaders in the answer: {len(leaders)} {[leader[:20] for leader in leaders[:5]]}")
    with expanded_chat(walk):
        walk.element_shot("#ip-chat", "item17-g-not-found", "the not-found answer with its closest passages")


def delete_notice(walk: Walk) -> None:
    walk.open()
    walk.choose(PDF)
    walk.open_tab("Library")
    walk.press("Delete document")
    wait_for(lambda: walk.find("#ip-confirm-delete").is_displayed(), "the confirming button", 15)
    time.sleep(1)
    walk.scroll_to("#ip-notice")
    walk.driver.execute_script("window.scrollBy(0, -120)")
    time.sleep(0.5)
    walk.shot("item17-d-delete-notice", f"the Library tab after Delete document with {PDF} chosen: the notice")
    walk.log_text("notice", "#ip-notice")
    walk.press("No, keep it")
    time.sleep(2)
    confirm = [b for b in walk.driver.find_elements(By.CSS_SELECTOR, "#ip-confirm-delete") if b.is_displayed()]
    walk.log.line(f"    after 'No, keep it': the confirming button shown {bool(confirm)}")
    walk.log_text("notice", "#ip-notice")
    walk.log.line(f"    row: {walk.library_row(PDF)}")


def head_label(walk: Walk) -> None:
    walk.open()
    walk.choose(PDF)
    walk.open_tab("What the model kept")
    wait_for(lambda: walk.text("#ip-tokens").strip(), "the kept tokens", 60)
    time.sleep(2)
    walk.scroll_top()
    walk.shot("item17-d-kept-tab", f"the top of 'What the model kept' for {PDF}: the head control's label")
    labels = walk.texts_shown(r"^(Attention|Layer$)")
    walk.log.line(f"    head control label: {'; '.join(labels) if labels else '(none found)'}")


def same_file_again(walk: Walk) -> None:
    walk.open()
    folder = walk.scratch / "same"
    folder.mkdir(exist_ok=True)
    again = folder / PDF
    shutil.copyfile(DOCS / PDF, again)
    walk.upload(again)
    wait_for(lambda: PDF in walk.text("#ip-notice"), "the upload notice", 60)
    wait_stable(
        lambda: walk.text("#ip-progress"),
        lambda text: PDF in text and "ready" in text,
        "the progress line",
        settle=3,
        timeout=120,
    )
    walk.scroll_to("#ip-notice")
    walk.driver.execute_script("window.scrollBy(0, -120)")
    time.sleep(0.5)
    walk.shot("item17-b-same-file", f"the Library tab after uploading {PDF} again under its name: notice, progress")
    walk.log_text("notice", "#ip-notice")
    walk.log_text("progress", "#ip-progress")
    walk.log.line(f"    Document: {walk.find('#ip-document input').get_attribute('value')!r}")
    for row in walk.library_rows():
        walk.log.line(f"    row: {row}")


class ProgressTimeline:
    """Each change of the progress line's text from the upload on, with the seconds since it (read with
    textContent, so also while the Library tab is hidden)."""

    def __init__(self, walk: Walk, start: float) -> None:
        self.walk, self.start, self.seen = walk, start, ""
        self.changes: list[str] = []

    def look(self) -> str:
        with contextlib.suppress(WebDriverException):
            text = self.walk.driver.execute_script(
                "const p = document.querySelector('#ip-progress'); if (!p) return '';"
                "const copy = p.cloneNode(true);"  # without Gradio's status tracker ("processing | 0.1s")
                "copy.querySelectorAll('[data-testid=status-tracker]').forEach(t => t.remove());"
                "return copy.textContent;"
            )
            text = " ".join((text or "").split())
            if text != self.seen:
                self.seen = text
                self.changes.append(f"{time.monotonic() - self.start:5.1f} s: {text}")
        return self.seen

    def wait_until(self, seconds: float) -> None:
        while (left := self.start + seconds - time.monotonic()) > 0:
            self.look()
            time.sleep(min(0.5, left))
        self.look()


def new_read(walk: Walk) -> None:
    """GPL-3.txt uploaded: the progress line at READ_MOMENTS (each of its changes in the log), and the Chat tab's
    re-read and across buttons while it is read (after the second moment, and after the last if it is still
    read)."""
    walk.open()
    walk.upload(DOCS / NEW_READ)
    start = time.monotonic()
    timeline = ProgressTimeline(walk, start)
    try:
        for seconds in READ_MOMENTS:
            timeline.wait_until(seconds)
            with walk.step(f"item 17 c: the progress line {seconds} s after the upload"):
                name = f"item17-c-progress-{seconds:02d}s"
                walk.element_shot("#ip-progress", name, f"{seconds} s after the upload")
                walk.log.line(f"    at {time.monotonic() - start:.1f} s")
                walk.log_text("progress", "#ip-progress")
            if seconds == READ_MOMENTS[1]:
                with walk.step(f"item 17 f: the Chat tab's buttons while {NEW_READ} is read"):
                    chat_buttons(walk, "item17-f-chat-buttons", start, timeline)
                walk.open_tab("Library")
        with walk.step("item 17 f: the Chat tab's buttons, later"):
            if "reading" in timeline.look():
                chat_buttons(walk, "item17-f-chat-buttons-later", start, timeline)
            else:
                walk.log.line(f"    {NEW_READ} is no longer read: no later look at the buttons")
    finally:
        timeline.look()
        walk.log.line("    the progress line's changes since the upload:")
        for change in timeline.changes:
            walk.log.line(f"      {change}")


def chat_buttons(walk: Walk, shot: str, start: float, timeline: ProgressTimeline) -> None:
    walk.log.line(f"    Document: {walk.find('#ip-document input').get_attribute('value')!r}")
    walk.log.line(f"    progress: {timeline.look()}")
    walk.open_tab("Chat")
    walk.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", walk.find("#ip-reread"))
    time.sleep(0.5)
    walk.shot(shot, f"the Chat tab {time.monotonic() - start:.0f} s after {NEW_READ} was uploaded, while it is read")
    for css in ("#ip-reread", "#ip-ask-across", "#ip-ask", "#ip-summarize"):
        button = walk.find(css)
        walk.log.line(f"    {css} {button.text.strip()!r}: enabled {button.is_enabled()}")
    walk.log.line(f"    progress then ({time.monotonic() - start:.1f} s): {timeline.look()}")


STAGE_QUESTION = "What does asn1Coding do?"
QUEUED_QUESTION = "Which license covers this manual?"


def item18_evidence_queue_stop(walk: Walk) -> None:
    """Issue 55: the passage looked at within a second of Ask, a second question shown waiting in line, Stop on the
    first, and both kept after a reload."""
    walk.chat_about(PDF)
    asked = walk.ask(STAGE_QUESTION)
    looking = wait_for(lambda: "Looking at" in walk.answer_to(STAGE_QUESTION), "the passage looked at", 60, every=0.05)
    walk.log.line(f"    'Looking at' shown {time.monotonic() - asked:.2f} s after Ask: {looking}")
    walk.log.text("the bubble", walk.answer_to(STAGE_QUESTION), limit=600)
    walk.ask(QUEUED_QUESTION)
    wait_for(lambda: "Waiting" in walk.answer_to(QUEUED_QUESTION), "the second question waiting", 30, every=0.05)
    with expanded_chat(walk):
        walk.element_shot("#ip-chat", "item18-looking-and-waiting", "the passage looked at, a question in line")
    walk.find("#ip-stop").click()
    walk.log.line("    Stop pressed on the first question")
    second = walk.wait_answer(QUEUED_QUESTION)
    walk.log.text("the second answer", second, limit=600)
    walk.log.text("the first after Stop", walk.answer_to(STAGE_QUESTION).split(QUEUED_QUESTION)[0], limit=600)
    with expanded_chat(walk):
        walk.element_shot("#ip-chat", "item18-after-stop", "the first stopped, the second answered")
    walk.driver.refresh()
    time.sleep(3)
    walk.chat_about(PDF, new=False)
    wait_for(lambda: QUEUED_QUESTION in walk.chat(), "the conversation after a reload", 60)
    time.sleep(2)
    with expanded_chat(walk):
        walk.element_shot("#ip-chat", "item18-after-reload", "the same two turns after a reload")


ITEMS: dict[int, Callable[[Walk], None]] = {
    10: item10_first_screen,
    2: item02_research_words,
    4: item04_sources,
    9: item09_layout,
    3: item03_long_waits,
    1: item01_stop,
    5: item05_duplicate,
    7: item07_errors,
    6: item06_state_glitches,
    8: item08_plots,
    11: item11_folder,
    12: item12_all_documents,
    13: item13_trusted_answers,
    14: item14_log_follow_up,
    15: item15_follow_up_after_not_found,
    16: item16_summary_outline,
    17: item17_small_things,
    18: item18_evidence_queue_stop,
}  # in the walk's order: the read of item 6 after the answers (it would slow them), the plots of that read in 8


def ensure_document(walk: Walk, name: str) -> None:
    """Upload `name` from the dev set and wait for its read, unless the home has it already."""
    if name in walk.text("#ip-library"):
        return
    walk.log.line(f"    {name} is not in the home: uploading it")
    walk.upload(DOCS / name)
    wait_for(lambda: "ready" in walk.library_row(name), f"{name} read", 1800, every=2)


def walk_items(items: list[int], url: str, out: Path, log: Log, scratch: Path, needs_pdf: bool) -> None:
    """The items on the app at `url`, in one browser; libtasn1.pdf uploaded first where needs_pdf and it is not
    in the library."""
    with chromium(scratch / "chromium-profile") as driver:
        walk = Walk(driver, url, out, log, scratch)
        if needs_pdf:
            with walk.step(f"{PDF} in the library"):
                walk.open()
                ensure_document(walk, PDF)
        for number in items:
            with walk.step(f"item {number}: {ITEMS[number].__doc__.splitlines()[0]}"):
                walk.open()  # each item on a freshly loaded page: what an earlier one left does not carry over
                ITEMS[number](walk)


def chosen_items(only: str | None) -> list[int]:
    if not only:
        return list(ITEMS)
    numbers = {int(re.sub(r"^item0*", "", part.strip(), flags=re.IGNORECASE)) for part in only.split(",")}
    unknown = numbers - set(ITEMS)
    if unknown:
        raise SystemExit(f"no item {sorted(unknown)}; the items: {sorted(ITEMS)}")
    return [number for number in ITEMS if number in numbers]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="the checkout whose app runs")
    parser.add_argument("--home", type=Path, required=True, help="a copy of an INFINIPOT_HOME with documents read")
    parser.add_argument("--out", type=Path, required=True, help="folder for the screenshots and walk.log")
    parser.add_argument("--only", help="items to walk, e.g. item1,item3 (default: all)")
    parser.add_argument("--port", type=int, default=7871)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    items = chosen_items(args.only)
    args.out.mkdir(parents=True, exist_ok=True)
    log = Log(args.out / "walk.log")
    log.line(f"app walk: repo {args.repo}, home {args.home}, items {items}")
    with tempfile.TemporaryDirectory(prefix="app-walk-") as folder:
        scratch = Path(folder)
        pythonpath = package_path(args.repo, scratch / "pythonpath")
        sessions = (
            ([n for n in items if n == 10], scratch / "empty-home", False),
            ([n for n in items if n != 10], args.home, True),
        )
        for numbers, home, needs_pdf in sessions:
            if numbers:
                home.mkdir(exist_ok=True)
                session = scratch / f"session-{numbers[0]}"
                session.mkdir()
                with app_server(pythonpath, home, args.port, args.out / "server.log") as url:
                    walk_items(numbers, url, args.out, log, session, needs_pdf)
    log.line(f"done: {len(log.failures)} failed steps" + "".join(f"\n  - {f}" for f in log.failures))
    return 1 if log.failures else 0


if __name__ == "__main__":
    sys.exit(main())
