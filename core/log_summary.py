"""What an on-call engineer wants first from a log: its time span, how its lines divide by level, each distinct
error and warning with its count and first and last time, and the bursts of them in time order.

Counted, not written: every figure comes from the log's own lines, and every message shown is one of them (its
first occurrence, with its line). Two timestamp forms are read: ISO 8601 at a line's start
("2024-11-14T13:37:47.557Z ERROR [payment-service] ...") and the syslog form ("Mar  9 10:19:04 relay-02
postfix/smtp[5102]: ..."). A line's level is the word after an ISO timestamp (ERROR, WARN, INFO, ...); a syslog
line has none, so one whose message reports a failure (error, failed, denied, timeout, deferred, ban, ...) counts
as a warning. Messages are grouped after numbers, hexadecimal ids and request ids are masked, so "timeout after
8000ms (attempt=1/3)" and "(attempt=2/3)" are one message seen twice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from difflib import SequenceMatcher

_ISO = re.compile(r"^(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?)(Z|[+-]\d\d:?\d\d)?\s+(?:\[?([A-Za-z]+)\]?\s+)?(.*)$")
_SYSLOG = re.compile(r"^([A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d)\s+(\S+)\s+([^:\s]+):\s*(.*)$")
_LEVELS = {
    "TRACE": "DEBUG", "DEBUG": "DEBUG", "INFO": "INFO", "NOTICE": "INFO", "WARN": "WARN", "WARNING": "WARN",
    "ERROR": "ERROR", "ERR": "ERROR", "CRITICAL": "ERROR", "CRIT": "ERROR", "FATAL": "ERROR", "ALERT": "ERROR",
    "EMERG": "ERROR",
}  # fmt: skip
# A syslog message that reports trouble (it has no level of its own).
_TROUBLE = re.compile(
    r"(?<!no )\b(error|errors|fail(?:ed|ure|s)?|denied|refused|timed? ?out|timeout|deferred|ban|unreachable|critical|"
    r"panic|unreadable|corrupt|not enough|exceeded|limit|warning|oom|killed|segfault)\b",
    re.IGNORECASE,
)
# Masked before messages are compared: request and hexadecimal ids, numbers (with units), pids in brackets.
_MASKS = [
    (re.compile(r"\breq-[0-9a-f]+\b"), "req-#"),
    (re.compile(r"\b[0-9A-F]{8,}\b|\b[0-9a-f]{8,}\b"), "#"),
    (re.compile(r"\[\d+\]"), "[#]"),
    (re.compile(r"\d+(?:\.\d+)*"), "#"),
]
# Messages this alike (difflib's ratio, ids and numbers masked) are one message: "Failed password for invalid user
# admin from ..." and "... user oracle from ..." are one attack.
ALIKE = 0.8
# Troubled lines closer than this in time are one burst (an incident).
BURST_GAP = timedelta(minutes=10)
# A log is a log when at least this share of its non-empty lines starts with a timestamp.
LOG_SHARE = 0.6


@dataclass
class LogLine:
    number: int  # 1-based line of the log
    time: datetime
    level: str  # DEBUG, INFO, WARN or ERROR
    source: str  # the component or program ("payment-service", "postfix/smtp")
    message: str
    text: str  # the whole line, as written


@dataclass
class Message:
    """A distinct error or warning message: its first line, and how often and when it was seen."""

    level: str
    source: str
    first: LogLine
    last: LogLine
    count: int = 1


@dataclass
class Burst:
    """Troubled lines close together in time: an incident."""

    lines: list[LogLine] = field(default_factory=list)

    @property
    def sources(self) -> list[str]:
        return list(dict.fromkeys(line.source for line in self.lines))


@dataclass
class LogSummary:
    lines: int  # timestamped lines
    first: LogLine
    last: LogLine
    levels: dict[str, int]  # lines per level
    sources: dict[str, int]  # lines per component or program, most first
    messages: list[Message]  # distinct errors and warnings, errors first, then by first time
    bursts: list[Burst]  # in time order


def parse_line(text: str, number: int, year: int = 2000) -> LogLine | None:
    """A timestamped log line, or None. `year`: for syslog stamps, which have none."""
    if match := _ISO.match(text):
        stamp, _, level, rest = match.groups()
        try:
            time = datetime.fromisoformat(stamp.replace(" ", "T"))
        except ValueError:
            return None
        level_name = _LEVELS.get((level or "").upper())
        if level_name is None:  # no level word: the word was part of the message
            rest = f"{level} {rest}" if level else rest
            level_name = "WARN" if _TROUBLE.search(rest) else "INFO"
        source = re.match(r"\[([^\]]+)\]", rest)
        return LogLine(number, time, level_name, source.group(1) if source else "", rest, text)
    if match := _SYSLOG.match(text):
        stamp, _, program, message = match.groups()
        try:
            time = datetime.strptime(f"{year} {' '.join(stamp.split())}", "%Y %b %d %H:%M:%S")
        except ValueError:
            return None
        level = "WARN" if _TROUBLE.search(message) else "INFO"
        return LogLine(number, time, level, re.sub(r"\[\d+\]$", "", program), message, text)
    return None


def is_log(lines: Sequence[str]) -> bool:
    """Whether most non-empty lines are timestamped log lines."""
    filled = [line for line in lines if line.strip()]
    return bool(filled) and sum(parse_line(line, 0) is not None for line in filled) >= LOG_SHARE * len(filled)


def signature(line: LogLine) -> str:
    """The line's message with ids and numbers masked: what repeats of one message share."""
    text = line.message
    for pattern, mask in _MASKS:
        text = pattern.sub(mask, text)
    return f"{line.level} {line.source} {text}"


def _alike(known: str, key: str) -> bool:
    """Whether two message signatures are one message (same level and source, ALIKE or more alike)."""
    if known.split(" ", 2)[:2] != key.split(" ", 2)[:2]:
        return False
    return known == key or SequenceMatcher(None, known, key).ratio() >= ALIKE


def summarize_log(lines: Sequence[str]) -> LogSummary | None:
    """The log's summary (the module's docstring); None when too few lines carry a timestamp."""
    parsed = [p for number, text in enumerate(lines, 1) if (p := parse_line(text, number)) is not None]
    if not parsed or not is_log(lines):
        return None
    levels: dict[str, int] = {}
    sources: dict[str, int] = {}
    messages: dict[str, Message] = {}
    for line in parsed:
        levels[line.level] = levels.get(line.level, 0) + 1
        if line.source:
            sources[line.source] = sources.get(line.source, 0) + 1
        if line.level in ("WARN", "ERROR"):
            key = signature(line)
            key = next((known for known in messages if _alike(known, key)), key)
            if key in messages:
                messages[key].count += 1
                messages[key].last = line
            else:
                messages[key] = Message(line.level, line.source, line, line)
    troubled = [line for line in parsed if line.level in ("WARN", "ERROR")]
    bursts: list[Burst] = []
    for line in sorted(troubled, key=lambda item: item.time):
        if bursts and line.time - bursts[-1].lines[-1].time <= BURST_GAP:
            bursts[-1].lines.append(line)
        else:
            bursts.append(Burst([line]))
    ordered = sorted(messages.values(), key=lambda m: (m.level != "ERROR", m.first.time, m.first.number))
    return LogSummary(
        len(parsed),
        parsed[0],
        parsed[-1],
        dict(sorted(levels.items(), key=lambda item: ["ERROR", "WARN", "INFO", "DEBUG"].index(item[0]))),
        dict(sorted(sources.items(), key=lambda item: -item[1])),
        ordered,
        bursts,
    )


def _clock(time: datetime) -> str:
    return time.strftime("%H:%M:%S")


def _span(first: datetime, last: datetime) -> str:
    minutes = int((last - first).total_seconds() // 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"


# Ids that say nothing of what happened: a request, trace or span id ("req-28f82e74").
_REQUEST_ID = re.compile(r"\b(?:req|request|trace|span|corr|txn)[-_:]?[0-9a-f]{6,}\b\s*", re.IGNORECASE)
# A host name leading a message ("shop-prod-03 ..."): the log's, said once in its summary.
_HOST = re.compile(r"^[a-z][a-z0-9.-]*-\d+\s+")
# An incident names at most this many of its distinct messages, each cut to this many characters.
INCIDENT_MESSAGES = 3
INCIDENT_MESSAGE_CHARS = 110


def plain_message(line: LogLine, most_chars: int | None = INCIDENT_MESSAGE_CHARS) -> str:
    """A line's message as a person reads it: without its "[source]" lead (said apart) and its host and request
    ids, cut at `most_chars` (None: whole)."""
    text = _HOST.sub("", _REQUEST_ID.sub("", re.sub(r"^\[[^\]]+\]\s*", "", line.message)).strip())
    if most_chars is None or len(text) <= most_chars:
        return text
    return text[: most_chars - 1].rstrip() + "…"


def what_happened(burst: Burst) -> list[str]:
    """The incident's distinct messages, errors first, then in time order: what happened."""
    distinct: dict[str, LogLine] = {}
    for line in burst.lines:
        key = signature(line)
        if not any(_alike(known, key) for known in distinct):
            distinct[key] = line
    ordered = sorted(distinct.values(), key=lambda line: (line.level != "ERROR", line.number))
    return [plain_message(line) for line in ordered[:INCIDENT_MESSAGES]]


def log_summary_text(summary: LogSummary, most_messages: int = 8, most_bursts: int = 6) -> tuple[str, list[dict]]:
    """The summary as text and as parts ({"title", "line", "points"}) for the outline: the span and levels, the
    errors and warnings, the incidents."""
    first, last = summary.first.time, summary.last.time
    same_day = first.date() == last.date()
    span = f"{first:%Y-%m-%d} {_clock(first)} to {_clock(last) if same_day else f'{last:%Y-%m-%d} {_clock(last)}'}"
    if first.year == 2000:  # a syslog stamp carries no year
        span = f"{first:%b %d} {_clock(first)} to {_clock(last) if same_day else f'{last:%b %d} {_clock(last)}'}"
    counts = ", ".join(f"{count:,} {level}" for level, count in summary.levels.items())
    top = ", ".join(f"{source} ({count:,})" for source, count in list(summary.sources.items())[:5])
    lead = f"A log of {summary.lines:,} timestamped lines from {span} ({_span(first, last)}): {counts}."
    if top:
        lead += f" Most lines come from {top}."
    parts = []
    shown = summary.messages[:most_messages]
    if shown:
        points = []
        for message in shown:
            when = _clock(message.first.time)
            if message.count > 1:
                when = f"{message.count} times, {when} to {_clock(message.last.time)}"
            where = f"{message.source}: " if message.source else ""
            said = plain_message(message.first, most_chars=None)
            points.append(f"{message.level} {where}{said} ({when}; line {message.first.number:,})")
        more = len(summary.messages) - len(shown)
        if more > 0:
            points.append(f"... and {more} more distinct warnings and errors")
        parts.append({"title": "Errors and warnings", "line": shown[0].first.number, "points": points})
    # An incident is a burst of several lines, or a single error; a lone warning is the day's noise.
    bursts = [b for b in summary.bursts if len(b.lines) > 1 or b.lines[0].level == "ERROR"]
    incidents = sorted(bursts, key=lambda b: -len(b.lines))[:most_bursts]
    incidents.sort(key=lambda b: b.lines[0].time)
    if incidents:
        points = []
        for burst in incidents:
            start, end = burst.lines[0], burst.lines[-1]
            window = _clock(start.time) if start is end else f"{_clock(start.time)} to {_clock(end.time)}"
            lines = f"line {start.number:,}" if start is end else f"lines {start.number:,}-{end.number:,}"
            where = ", ".join(source for source in burst.sources[:3] if source)
            count = len(burst.lines)
            said = "; ".join(what_happened(burst))
            points.append(
                f"{window}{f', {where}' if where else ''}: {said} ({count} warning or error line{'s' * (count > 1)}; "
                f"{lines})"
            )
        parts.append({"title": "Incidents in time order", "line": incidents[0].lines[0].number, "points": points})
    text = lead
    for part in parts:
        text += f"\n\n{part['title']}:\n" + "\n".join(f"- {point}" for point in part["points"])
    return text, parts
