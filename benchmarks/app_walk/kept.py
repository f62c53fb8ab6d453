"""'What the model kept': the kept tokens, the head control, the retention map and the memory plots."""

from __future__ import annotations

import time

from selenium.webdriver.common.by import By

from .browser import Part, Walk, wait_for
from .documents import PDF, tab_words
from .reading import STORY_PART

TAB = "What the model kept"


def words(walk: Walk) -> None:
    """The kept view's labels: none of the method's terms."""
    tab_words(walk, TAB, "kept-words")


def head_label(walk: Walk) -> None:
    """The top of the kept view for libtasn1.pdf: the head control's label."""
    walk.choose(PDF)
    walk.open_tab(TAB)
    wait_for(lambda: walk.text("#ip-tokens").strip(), "the kept tokens", 60)
    time.sleep(2)
    walk.scroll_top()
    walk.shot("kept-head-label", f"the top of '{TAB}' for {PDF}: the head control's label")
    labels = walk.texts_shown(r"^(Attention|Layer$)")
    walk.log.line(f"    head control label: {'; '.join(labels) if labels else '(none found)'}")


def plots(walk: Walk) -> None:
    """The retention map and both memory plots, of libtasn1.pdf and of a read by the app."""
    kept_view(walk, PDF, "kept-libtasn1")
    walk.open_tab("Library")
    if walk.library_row(STORY_PART):  # its memory was sampled while the app read it
        kept_view(walk, STORY_PART, "kept-story-walk")
    else:
        walk.log.line(f"    {STORY_PART} is not in the library (reading:cancel-resume reads it): no plots of a read")


def kept_view(walk: Walk, name: str, prefix: str) -> None:
    walk.choose(name)
    walk.open_tab(TAB)
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
    walk.shot(f"{prefix}-whole", f"the whole '{TAB}' tab of {name}", full=True)
    walk.log_text("legend", ".ip-legend")
    captions = [line for line in walk.body().splitlines() if "whole memory" in line or "no record of" in line]
    walk.log.text("memory caption", " ".join(captions) or "(not found)")


def plots_or_none(walk: Walk) -> bool:
    """Both memory plots drawn, or the caption of a read without memory samples (whose plots are hidden)."""
    if len(walk.driver.find_elements(By.CSS_SELECTOR, "canvas, svg.marks")) >= 2:
        return True
    return "no record of memory" in walk.body()


PARTS = (
    Part("words", words),
    Part("head-label", head_label),
    Part("plots", plots),
)
