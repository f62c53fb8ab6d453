"""What every screen of the walk shares: the app's server, headless Chromium, the Walk that finds, clicks, waits
and takes screenshots on the page, and walk.log."""

from __future__ import annotations

import base64
import contextlib
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
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
VIEWPORT = (1400, 1000)  # a laptop's screen: where a control below the fold is one a user does not see
ANSWERED = ("Sources:", "Closest passages:")  # the line under a complete answer
STREAMING = "Loading content"  # Gradio's placeholder in a bubble still being written
ANSWER_SECONDS = 300  # an answer on a 2-core machine with the bundled model: ~10-30 s, more behind another one
READ_SECONDS = 300


@dataclass(frozen=True)
class Part:
    """One thing a screen shows, walked on a freshly loaded page; `empty_home` parts run on a home of their own
    with no documents, before the others."""

    name: str
    run: Callable[[Walk], None]
    empty_home: bool = False

    @property
    def what(self) -> str:
        return " ".join((self.run.__doc__ or self.name).split("\n\n")[0].split())  # its first paragraph


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

    def log_untranslated(self) -> None:
        """Gradio's own labels shown as their keys ('common.xxx'), where a translation is missing."""
        keys = self.texts_shown(r"^common\.")
        self.log.line(f"    Gradio's untranslated keys on the page: {'; '.join(keys) if keys else 'none'}")

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

    # -- the chat, whole -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def expanded_chat(self) -> Iterator[None]:
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
        self.driver.execute_script(script, True)
        time.sleep(0.5)
        try:
            yield
        finally:
            self.driver.execute_script(script, False)

    def open_from_chat(self, matches, what: str, shot: str, caption: str, timeout: float = 30) -> None:
        """Click the chat's first button whose text `matches` (a source, an outline's part), wait for the document
        to open at its place and take a screenshot of the page."""
        button = wait_for(
            lambda: next(b for b in self.driver.find_elements(By.CSS_SELECTOR, "#ip-chat button") if matches(b.text)),
            what,
            timeout,
        )
        self.log.line(f"    clicking {what}: {button.text.strip()!r}")
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
        button.click()
        wait_for(lambda: "starts at" in self.body(), "the place it opens", 120)
        time.sleep(2)
        self.shot(shot, caption, full=True)

    def body(self) -> str:
        """The page's visible text."""
        return self.driver.find_element(By.TAG_NAME, "body").text
