"""A real browser: headless Chromium (Debian's chromium and chromium-driver, installed by .ci/run) opens the app,
sets a tiny model in Settings, uploads a file, waits for it to be read, asks a question, reads the answer and
opens a source it cites."""

from __future__ import annotations

import random
import re
import time

import pytest
from browser_page import (
    By,
    normalized,
    open_tab,
    replace_value,
    visible_text,
    wait_for,
)
from helpers import make_workspace, running_app, tiny_settings, wait_until, wait_until_stable
from tiny_models import save_model_folder, write_notes

pytestmark = pytest.mark.slow  # a browser and a server


def test_upload_read_and_ask_in_a_browser(browser, tmp_path, infinipot_home):
    model_dir = save_model_folder(tmp_path / "tiny-llama")
    notes = write_notes(tmp_path / "notes.txt", lines=8)
    workspace = make_workspace(infinipot_home)
    with running_app(workspace) as url:
        browser.get(url)
        wait_for(lambda: "InfiniPot document chat" in browser.find_element(By.TAG_NAME, "body").text, "the page", 60)

        open_tab(browser, "Settings")
        replace_value(browser, "#ip-model textarea, #ip-model input", model_dir)
        replace_value(browser, "#ip-pot-size input", "128")
        browser.find_element(By.CSS_SELECTOR, "#ip-advanced .label-wrap").click()  # the closed Advanced part
        wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "#ip-keep-size input").is_displayed(), "Advanced", 30)
        replace_value(browser, "#ip-keep-size input", "48")
        replace_value(browser, "#ip-answer-length input[type='number']", "16")
        wait_for(
            lambda: "a memory of 128 tokens, 48 kept" in visible_text(browser, "#ip-settings-notice"), "settings", 60
        )
        # Answers: from the model's memory alone (the answer is then compared with the engine's), checked as typed.
        pot_alone = next(
            label
            for label in browser.find_elements(By.CSS_SELECTOR, "#ip-answer-from label")
            if label.text.strip() == "The model's memory of the document alone"
        )
        pot_alone.click()
        replace_value(browser, "#ip-seed input", "-2")
        wait_for(
            lambda: "Not valid: seed must be" in visible_text(browser, "#ip-answers-notice"), "the seed refused", 60
        )
        replace_value(browser, "#ip-seed input", "0")
        answers = wait_for(
            lambda: (t := visible_text(browser, "#ip-answers-notice")) and "valid: from" in t and t, "ok"
        )
        assert "from the model's memory of the document alone" in answers and "at most 16 tokens" in answers

        open_tab(browser, "Library")
        # Only bad files: each gets a lasting line with its reason, the uploader is emptied (the bad file is not
        # sent again with the next upload), and no red "Error" pill covers the drop zone.
        bad, empty = tmp_path / "bad.pdf", tmp_path / "empty.txt"
        bad.write_bytes(random.Random(5).randbytes(5000))
        empty.write_bytes(b"")
        browser.find_element(By.CSS_SELECTOR, "#ip-upload input[type='file']").send_keys(str(bad))
        wait_for(lambda: "bad.pdf was not added:" in visible_text(browser, "#ip-notice"), "the bad.pdf line", 60)
        browser.find_element(By.CSS_SELECTOR, "#ip-upload input[type='file']").send_keys(str(empty))
        notice = wait_for(
            lambda: (t := visible_text(browser, "#ip-notice")) and "empty.txt was not added:" in t and t,
            "the empty.txt line",
            60,
        )
        assert "is empty (0 bytes)" in notice and "bad.pdf" not in notice, notice
        assert "Error" not in visible_text(browser, "#ip-upload")
        time.sleep(5)  # a toast would have gone by now; the notice stays
        assert "empty.txt was not added:" in visible_text(browser, "#ip-notice")

        browser.find_element(By.CSS_SELECTOR, "#ip-upload input[type='file']").send_keys(str(notes))
        wait_for(
            lambda: "notes.txt added to the library" in visible_text(browser, "#ip-notice"), "the upload notice", 60
        )
        library = wait_for(lambda: (t := visible_text(browser, "#ip-library")) and "ready" in t and t, "the read")
        assert "notes.txt" in library and "/ 128" in library and "Memory (kept / size)" in library
        assert "notes.txt" in browser.find_element(By.CSS_SELECTOR, "#ip-document input").get_attribute("value")
        assert "ready" in visible_text(browser, "#ip-progress")

        doc_id = workspace.library()[0]["doc_id"]
        stored = workspace.service.open_pot(doc_id)
        question = "What does the fox do?"
        expected = "".join(stored.engine.answer(stored.pot, question, 16)).strip()

        open_tab(browser, "Chat")
        browser.find_element(By.CSS_SELECTOR, "#ip-question textarea").send_keys(question)
        browser.find_element(By.CSS_SELECTOR, "#ip-ask").click()
        chat = wait_for(
            lambda: (t := visible_text(browser, "#ip-chat")) and question in t and len(t) > len(question) and t,
            "the question and the start of its answer",
        )
        wait_for(lambda: normalized(expected)[:40] in normalized(visible_text(browser, "#ip-chat")), "the answer", 120)
        shot = tmp_path / "app.png"
        browser.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        assert question in chat

        # A source under the answer opens "What the model kept" at the line it cites.
        def source_button():
            buttons = browser.find_elements(By.CSS_SELECTOR, "#ip-chat button")
            return next((b for b in buttons if re.fullmatch(r"line \d+ \(\d+%\)", b.text.strip())), None)

        source = wait_for(source_button, "a source button under the answer", 60)
        cited_line = re.match(r"line (\d+)", source.text.strip()).group(1)
        quoted = re.findall(r"“([^”]*)”", visible_text(browser, "#ip-chat"))  # the sentences quoted under the answer
        source.click()
        wait_for(lambda: f"starts at line {cited_line} ·" in visible_text(browser, "body"), "the cited line", 120)
        # ... with the sentence quoted under the answer highlighted there, scrolled into the text box's view.
        marked = wait_for(
            lambda: browser.find_elements(By.CSS_SELECTOR, "#ip-tokens .ip-quoted"), "the quoted sentence marked", 60
        )
        marked_text = normalized("".join(span.get_attribute("textContent") for span in marked))
        # The caption says whether the model still holds the quoted words, as the colours under the line show.
        note = normalized(visible_text(browser, "body"))
        words = [span for span in marked if span.get_attribute("textContent").strip()]
        forgotten = ["ip-dropped" in span.get_attribute("class") for span in words]
        if all(forgotten):
            assert "the model no longer holds these words" in note, note
        elif not any(forgotten):
            assert re.search(r"the model still holds all [\d,]+ of its words", note), note
        else:
            assert re.search(r"the model still holds (all [\d,]+ of its|[\d,]+ of these [\d,]+) words", note), note
        assert marked_text and "highlighted in yellow" not in note
        unspaced = lambda text: "".join(text.replace("…", "").split())  # noqa: E731
        assert any(unspaced(marked_text)[:40] in unspaced(quote) for quote in quoted), (marked_text, quoted)
        box = browser.find_element(By.CSS_SELECTOR, "#ip-tokens .ip-text")
        in_view = "const b = arguments[0].getBoundingClientRect(), m = arguments[1].getBoundingClientRect();"
        in_view += " return m.top >= b.top && m.bottom <= b.bottom;"
        assert browser.execute_script(in_view, box, marked[0])
        open_tab(browser, "Chat")

        # Stop: a slow answer stops growing once Stop is pressed; it is marked stopped on the page and stored so.
        follow_up = "Who is lazy?"
        full = list(stored.engine.answer(stored.pot, follow_up, 16))
        assert len(full) >= 6, full  # enough pieces to stop in the middle
        workspace.service.answer_pace = 2.0  # a loaded machine may show the first piece late: stop lands mid-answer
        browser.find_element(By.CSS_SELECTOR, "#ip-question textarea").send_keys(follow_up)
        browser.find_element(By.CSS_SELECTOR, "#ip-ask").click()

        def partial_answer() -> str:
            """The answer's words as shown (its Sources line and the stopped mark left out)."""
            text = visible_text(browser, "#ip-chat").replace("(stopped)", "")
            shown = normalized(text.split(follow_up, 1)[1]) if follow_up in text else ""
            return shown.split("Sources:")[0].strip()

        # Its first words, not the line saying what the answer waits for.
        wait_for(lambda: (a := partial_answer()) and not a.endswith("…"), "the start of the answer", 60, every=0.1)
        browser.find_element(By.CSS_SELECTOR, "#ip-stop").click()
        # Unchanged for longer than the 2 s between pieces: the answer stopped growing (or it was complete).
        stopped = wait_until_stable(
            partial_answer, settle=2.5, timeout=120, what="the answer to stop growing", ignore=(Exception,)
        )
        assert len(stopped) < len(normalized("".join(full)))
        # The mark comes from Stop's own event, which a loaded machine may run later than the 2.5 s above.
        wait_for(lambda: "(stopped)" in visible_text(browser, "#ip-chat"), "the stopped mark", 60)
        conversation = workspace.conversations(doc_id)[-1]["id"]
        messages = wait_until(
            lambda: (m := workspace.messages(conversation)) and len(m) == 4 and m, what="the stopped answer stored"
        )
        assert [m["content"] for m in messages][::2] == [question, follow_up]
        assert messages[3]["stopped"] and not messages[1]["stopped"]
        kept = normalized(messages[3]["content"])  # stored as far as it got (a piece in flight may be in it too)
        assert kept.startswith(stopped) and len(kept) < len(normalized("".join(full)))
        assert messages[1]["answer_from"] == "pot"  # as chosen in Settings

        # Another document chosen: "What the model kept" starts over at its first token, without pressing Show.
        second = write_notes(tmp_path / "second.txt", lines=4, tag="-second")
        settings = {**tiny_settings(model_dir), "pot_size": 128, "keep_size": 48}
        (added,) = workspace.add_files([str(second)], settings)
        wait_until(lambda: workspace.ready(added["doc_id"]), timeout=120, what="the second read", ignore=(ValueError,))
        second_total = workspace.kept_window(added["doc_id"], 0, 0, 0, 10)["total"]
        browser.find_element(By.CSS_SELECTOR, "#ip-document input").click()
        option = wait_for(
            lambda: next(
                (o for o in browser.find_elements(By.CSS_SELECTOR, "[role=option]") if "second.txt" in o.text), None
            ),
            "the second document in the list",
            30,
        )
        option.click()
        open_tab(browser, "What the model kept")
        caption = wait_for(
            lambda: (t := visible_text(browser, "body")) and f"of {second_total:,} ·" in t and t,
            "the second document's first window",
            60,
        )
        assert f"Tokens 0-{second_total - 1:,} of {second_total:,}" in caption
        assert visible_text(browser, "#ip-tokens").strip()

        # Library buttons: a ready document cannot be cancelled or resumed; Delete asks before it deletes.
        open_tab(browser, "Library")
        button = lambda label: next(  # noqa: E731
            b for b in browser.find_elements(By.CSS_SELECTOR, "button") if b.text.strip() == label
        )
        wait_for(lambda: not button("Cancel reading").is_enabled(), "Cancel disabled for a ready document", 30)
        assert not button("Resume").is_enabled() and button("Delete document").is_enabled()
        button("Delete document").click()
        wait_for(lambda: "Delete second.txt?" in visible_text(browser, "#ip-notice"), "the question before deleting")
        button("No, keep it").click()
        wait_for(lambda: "Nothing was deleted" in visible_text(browser, "#ip-notice"), "the document kept")
        assert len(workspace.library()) == 2

        # After a reload the latest document is chosen, so Chat is not empty.
        browser.get(url)
        wait_for(
            lambda: "second.txt" in browser.find_element(By.CSS_SELECTOR, "#ip-document input").get_attribute("value"),
            "the latest document chosen after a reload",
            60,
        )


def test_after_an_answer_the_chat_shows_the_top_of_its_question(browser, tmp_path, infinipot_home):
    model_dir = save_model_folder(tmp_path / "tiny-llama")
    notes = write_notes(tmp_path / "notes.txt", lines=8)
    workspace = make_workspace(infinipot_home)
    # Room for the page's default answer length (256 tokens): the tiny model's answer is long.
    (added,) = workspace.add_files([str(notes)], {**tiny_settings(model_dir), "pot_size": 2048, "keep_size": 512})
    wait_until(lambda: workspace.ready(added["doc_id"]), timeout=120, what="the read", ignore=(ValueError,))
    with running_app(workspace) as url:
        browser.get(url)
        wait_for(
            lambda: "notes.txt" in browser.find_element(By.CSS_SELECTOR, "#ip-document input").get_attribute("value"),
            "the document chosen",
            60,
        )
        open_tab(browser, "Chat")
        # A chat lower than the answer, as the app's 420 px are for a long answer with its sources and quotes.
        browser.execute_script("document.querySelector('#ip-chat .bubble-wrap').style.maxHeight = '140px'")
        question = "What does the fox do?"
        ask = browser.find_element(By.CSS_SELECTOR, "#ip-ask")
        wait_for(ask.is_enabled, "Ask enabled", 60)
        browser.find_element(By.CSS_SELECTOR, "#ip-question textarea").send_keys(question)
        ask.click()
        wait_for(lambda: re.search(r"Sources:|Closest passages:", visible_text(browser, "#ip-chat")), "the answer", 180)
        where = """
            const box = document.querySelector('#ip-chat .bubble-wrap');
            const rows = box.querySelectorAll('.message-row');
            const asked = rows[rows.length - 2], answer = rows[rows.length - 1];
            return {top: asked.getBoundingClientRect().top - box.getBoundingClientRect().top,
                    answer: answer.getBoundingClientRect().height, box: box.clientHeight};
        """
        # Gradio scrolls the chat to its bottom after the answer; then the question's top is brought into view.
        shown = wait_for(lambda: (w := browser.execute_script(where)) and w["top"] >= 0 and w, "the question's top", 30)
        assert shown["answer"] > shown["box"], shown  # the answer alone is taller than the chat
