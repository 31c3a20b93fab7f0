"""Normalised views of a text, the shapes agent traces print secrets in, mapped back to raw offsets.

A `View` is a text plus segments that map each of its characters to a span of a raw text, so a
match in a view is redacted in the raw text whole: JSON unescaped (once, then again if still
escaped), ANSI colour escapes (`grep --color`) and `cat -n` numbers and `cat -A` markers stripped,
terminal hard wraps at the wrap width joined, a token cut by a line break at any other width joined
back (`line_join`), `%XX` decoded, base64 blobs that start like a secret decoded (bounded in size,
count and depth), and a PEM block cut between two messages of one trajectory joined.
"""

from __future__ import annotations

import re
import urllib.parse
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum

import polars as pl

from trace_assets.secret_scan.judge import b64_text

MAX_BLOB_CHARS = 65_536
MAX_BLOBS_PER_TEXT = 16
MAX_DECODE_DEPTH = 2
# JSON escaping undone up to this many times: a tool's JSON output, inside a step's JSON, inside a row.
MAX_JSON_LAYERS = 3


class Framing(StrEnum):
    """One way a text was normalised; a view's framing names each step, joined by `+`."""

    RAW = "raw"
    JSON = "json"
    ANSI = "ansi"
    CAT_N = "cat_n"
    CAT_A = "cat_a"
    REWRAP = "rewrap"
    LINE_JOIN = "line_join"
    URL = "url"
    BASE64 = "base64"
    PEM_JOIN = "pem_join"


@dataclass(frozen=True)
class Segment:
    """View characters [start, end) come from raw text `source`, characters [raw_start, raw_end).

    A copied segment maps character to character; a replaced one (an escape, a decoded blob) maps
    as a whole.
    """

    start: int
    end: int
    source: int
    raw_start: int
    raw_end: int
    copied: bool


class View:
    def __init__(self, text: str, framing: str, segments: list[Segment]) -> None:
        self.text = text
        self.framing = framing
        self.segments = segments
        self._starts = [segment.start for segment in segments]

    @classmethod
    def raw(cls, text: str, source: int) -> View:
        return cls(text, Framing.RAW, [Segment(0, len(text), source, 0, len(text), True)])

    def _overlapping(self, start: int, end: int) -> Iterator[Segment]:
        i = max(bisect_right(self._starts, start) - 1, 0)
        while i < len(self.segments) and self.segments[i].start < end:
            if self.segments[i].end > start:
                yield self.segments[i]
            i += 1

    def raw_spans(self, start: int, end: int) -> dict[int, tuple[int, int]]:
        """The raw span, per source text, that view characters [start, end) come from."""
        spans: dict[int, tuple[int, int]] = {}
        for segment in self._overlapping(start, end):
            if segment.copied:
                low = segment.raw_start + max(start, segment.start) - segment.start
                high = segment.raw_start + min(end, segment.end) - segment.start
            else:
                low, high = segment.raw_start, segment.raw_end
            old = spans.get(segment.source)
            spans[segment.source] = (low, high) if old is None else (min(old[0], low), max(old[1], high))
        return spans

    def joined_within(self, start: int, end: int) -> bool:
        """Whether text removed from the raw text (a line break a join took out) lies inside [start, end)."""
        return any(not segment.copied and segment.start == segment.end for segment in self._overlapping(start, end))

    def derive(self, pieces: Iterable[tuple[str, int, int, bool]], framing: str) -> View:
        """A new view from pieces (text, start, end, copied) that cover this view in order."""
        texts: list[str] = []
        segments: list[Segment] = []
        position = 0
        for text, start, end, copied in pieces:
            if copied:
                for parent in self._overlapping(start, end):
                    low, high = max(start, parent.start), min(end, parent.end)
                    if high <= low:
                        continue
                    offset = position + low - start
                    if parent.copied:
                        raw_low = parent.raw_start + low - parent.start
                        segments.append(
                            Segment(offset, offset + high - low, parent.source, raw_low, raw_low + high - low, True)
                        )
                    else:
                        segments.append(
                            Segment(offset, offset + high - low, parent.source, parent.raw_start, parent.raw_end, False)
                        )
            else:
                for source, (raw_low, raw_high) in self.raw_spans(start, end).items():
                    segments.append(Segment(position, position + len(text), source, raw_low, raw_high, False))
                    break
            texts.append(text)
            position += len(text)
        return View("".join(texts), f"{self.framing}+{framing}".removeprefix("raw+"), segments)


def _substitute(
    view: View, pattern: re.Pattern[str], replace: Callable[[re.Match[str]], str], framing: str
) -> View | None:
    """`view` with every match of `pattern` replaced, or None when nothing matched."""
    pieces: list[tuple[str, int, int, bool]] = []
    last = 0
    for match in pattern.finditer(view.text):
        start, end = match.span(match.re.groups and 1 or 0)
        if start > last:
            pieces.append((view.text[last:start], last, start, True))
        pieces.append((replace(match), start, end, False))
        last = end
    if not pieces:
        return None
    if last < len(view.text):
        pieces.append((view.text[last:], last, len(view.text), True))
    return view.derive(pieces, framing)


_JSON_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|[\"\\/bfnrt])")
_JSON_CHARS = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/"}
_STILL_ESCAPED = re.compile(r"\\[nt\"/]|\\u[0-9a-fA-F]{4}")
_CAT_N = re.compile(r"^ {0,8}\d{1,9}\t", re.MULTILINE)
_CAT_A = re.compile(r"(\^I|\$(?=\r?\n|\Z))")
_CAT_A_LINES = re.compile(r"\$\r?\n.*\$\r?\n")
_URL_ESCAPES = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
# CSI sequences: colours (`grep --color`, `ls --color`) and erase-line (`\x1b[K`).
ANSI_ESCAPE = r"\x1b\[[0-9;?]*[A-Za-z]"
_ANSI = re.compile(ANSI_ESCAPE)
# Characters a token or base64 blob is made of: a line break between two of them may be a wrap.
TOKEN_CHARS = "A-Za-z0-9_+/=.~-"
MAX_JOINED_LINES = 64  # a 4096-bit key's base64 at 80 columns is about 40 lines
_TOKEN_RUN = re.compile(rf"[{TOKEN_CHARS}]*")
_TRAILING_NON_BASE64 = re.compile(r"[^A-Za-z0-9+/=]+\Z")
_TOKEN_END = re.compile(r"[\s\"'`,;)\]}>]|\Z")


def _json_unescape(match: re.Match[str]) -> str:
    """One escape, one character: a surrogate's (`\\ud800`, alone or half of a pair) is U+FFFD, as a
    lone surrogate is no text the Rust engine can read (and a pair's halves hold no secret)."""
    escape = match.group(0)
    if escape[1] != "u":
        return _JSON_CHARS[escape[1]]
    code = int(escape[2:], 16)
    return "\ufffd" if 0xD800 <= code <= 0xDFFF else chr(code)


def _rewrap_pattern(width: int) -> re.Pattern[str]:
    return re.compile(rf"^[^\n]{{{width}}}(\r?\n)", re.MULTILINE)


def _all_found(texts: list[str], regex: str) -> list[list[str]]:
    """`regex`'s matches in each text, by the Rust engine in one call for them all: Python's `re`
    takes a whole second over a few MB for an alternation of the kinds' 200 literals, Rust's
    literal prefilter not; and one call per text cost more than the search (the regex is
    compiled at each call)."""
    if not texts:
        return []
    return pl.Series(texts, dtype=pl.String).str.extract_all(regex).to_list()


def _spans(text: str, matches: list[str]) -> Iterator[tuple[int, int]]:
    """Where each of `text`'s matches (in order) is."""
    cursor = 0
    for match in matches:
        start = text.find(match, cursor)
        cursor = start + len(match)
        yield start, cursor


def _wrapped_breaks(text: str, matches: list[str]) -> list[tuple[int, int]]:
    """The line breaks inside tokens that the line-join regex (a literal, token characters to the
    end of the line, a line starting with one more) found (`matches`): the first after the literal, then each next one
    while the line before it is full and all token characters, as a terminal of any width wraps a
    long token. The first line must be as long as the text's longest (a wrap fills the screen's
    width; a JSON prefix may make it longer), the next as long as it or as the longest of the rest,
    each later one as long as the second; the token must end where tokens end (a space, a quote,
    the end of its line or text): a line that merely ends with a token, then `root@host:~# `, is no wrap."""
    breaks: list[tuple[int, int]] = []
    lengths: list[int] = []
    for found_start, found_end in _spans(text, matches):
        newline = text.rfind("\n", found_start, found_end)
        start = newline - (text[newline - 1] == "\r")
        if breaks and start <= breaks[-1][0]:
            continue
        width = start - (text.rfind("\n", 0, found_start) + 1)
        lengths = lengths or sorted((len(line.rstrip("\r")) for line in text.split("\n")), reverse=True)
        if width < lengths[0]:
            continue
        full = {width, lengths[1] if len(lengths) > 1 else width}
        cuts = [(start, newline + 1)]
        position, kept = newline + 1, 0
        while len(cuts) <= MAX_JOINED_LINES:
            end = _TOKEN_RUN.match(text, position).end()  # type: ignore[union-attr]
            if _TOKEN_END.match(text, end):
                kept = len(cuts)  # the token may end here: the cuts so far are a wrap
            after = end + (2 if text.startswith("\r\n", end) else 1)
            if end - position not in full or not text.startswith(("\n", "\r\n"), end) or after >= len(text):
                break
            if not re.match(rf"[{TOKEN_CHARS}]", text[after]):
                break
            full = {end - position}
            cuts.append((end, after))
            position = after
        breaks += cuts[:kept]
    return breaks


class Normaliser:
    """Builds the views of one text worth scanning besides the raw text."""

    def __init__(self, wrap_width: int, base64_triggers: Iterable[str], line_join: str | None = None) -> None:
        self.wrap = _rewrap_pattern(wrap_width) if wrap_width > 0 else None
        self.triggers = sorted(set(base64_triggers))
        triggers = "|".join(sorted({re.escape(t) for t in base64_triggers}, key=len, reverse=True))
        self.blob = re.compile(rf"(?:{triggers})[A-Za-z0-9+/_-]{{8,{MAX_BLOB_CHARS}}}={{0,2}}")
        self.line_join = line_join

    def normalised(self, view: View) -> View | None:
        """JSON unescaped (up to MAX_JSON_LAYERS times), colours and `cat` prefixes stripped, hard wraps and
        tokens cut by a line break joined: one view, or None."""
        return self.normalised_many([view])[0]

    def normalised_many(self, views: list[View]) -> list[View | None]:
        """`normalised` of each view, the line-join regex run once over them all."""
        unframed = [self._unframed(view) for view in views]
        found: dict[int, list[str]] = {}
        if self.line_join is not None:
            joinable = [i for i, view in enumerate(unframed) if "\n" in view.text]
            found = dict(zip(joinable, _all_found([unframed[i].text for i in joinable], self.line_join)))
        normalised: list[View | None] = []
        for i, (view, current) in enumerate(zip(views, unframed)):
            if found.get(i):
                current = self._joined_lines(current, found[i]) or current
            normalised.append(None if current is view else current)
        return normalised

    def blobs(self, views: list[View]) -> list[list[str]]:
        """The distinct base64 blobs in each view, in order; only views holding a trigger (one
        vectorised test for them all) are searched."""
        texts = pl.Series([view.text for view in views], dtype=pl.String)
        holding = texts.str.contains_any(self.triggers).to_list() if views else []
        return [
            list(dict.fromkeys(m.group(0) for m in self.blob.finditer(view.text))) if holds else []
            for view, holds in zip(views, holding)
        ]

    def _unframed(self, view: View) -> View:
        """The view with every framing but cut tokens undone (itself when none applies)."""
        current = view
        for _ in range(MAX_JSON_LAYERS):
            if "\\" not in current.text or not _STILL_ESCAPED.search(current.text):
                break
            current = _substitute(current, _JSON_ESCAPE, _json_unescape, Framing.JSON) or current
        if "\x1b" in current.text:
            current = _substitute(current, _ANSI, lambda m: "", Framing.ANSI) or current
        if "\t" in current.text and len(_CAT_N.findall(current.text, 0, 4096)) >= 2:
            current = _substitute(current, _CAT_N, lambda m: "", Framing.CAT_N) or current
        if "$" in current.text and _CAT_A_LINES.search(current.text):
            current = (
                _substitute(current, _CAT_A, lambda m: "\t" if m.group(0) == "^I" else "", Framing.CAT_A) or current
            )
        if self.wrap is not None:
            current = _substitute(current, self.wrap, lambda m: "", Framing.REWRAP) or current
        return current

    def _joined_lines(self, view: View, matches: list[str]) -> View | None:
        breaks = _wrapped_breaks(view.text, matches)
        if not breaks:
            return None
        pieces: list[tuple[str, int, int, bool]] = []
        last = 0
        for start, end in breaks:
            if start > last:
                pieces.append((view.text[last:start], last, start, True))
            pieces.append(("", start, end, False))
            last = end
        pieces.append((view.text[last:], last, len(view.text), True))
        return view.derive(pieces, Framing.LINE_JOIN)

    def decoded(self, view: View, blob: str, framing: Framing, depth: int = 1) -> list[View]:
        """Views of each occurrence of `blob` in `view`, decoded; then blobs inside those, to the depth bound."""
        if len(blob) > MAX_BLOB_CHARS:
            return []
        text = urllib.parse.unquote(blob) if framing is Framing.URL else b64_text(blob)
        if not text or text == blob:
            return []
        views: list[View] = []
        start = view.text.find(blob)
        while start >= 0 and len(views) < MAX_BLOBS_PER_TEXT:
            decoded = view.derive([(text, start, start + len(blob), False)], framing)
            views.append(decoded)
            start = view.text.find(blob, start + len(blob))
        if depth < MAX_DECODE_DEPTH and views:
            normalised = self.normalised(views[0])
            inner = normalised or views[0]
            if normalised is not None:
                views.append(normalised)
            for match in self.blob.finditer(inner.text):
                views += self.decoded(inner, match.group(0), Framing.BASE64, depth + 1)
        return views


def joined(first: View, start: int, second: View, end: int, second_start: int = 0) -> View:
    """A block cut between two messages: `first` from `start` to its last base64 character (a JSON
    string's closing quote stays out), a newline, `second` from `second_start` (past a prompt or a
    note before the rest of the block) up to `end`."""
    first_end = len(_TRAILING_NON_BASE64.sub("", first.text))
    tail = first.derive([(first.text[start:first_end], start, first_end, True)], Framing.RAW)
    head = second.derive([(second.text[second_start:end], second_start, end, True)], Framing.RAW)
    segments = list(tail.segments)
    offset = len(tail.text) + 1
    last = segments[-1] if segments else Segment(0, 0, first.segments[0].source, start, start, True)
    segments.append(Segment(len(tail.text), offset, last.source, last.raw_end, last.raw_end, False))
    segments += [
        Segment(s.start + offset, s.end + offset, s.source, s.raw_start, s.raw_end, s.copied) for s in head.segments
    ]
    return View(f"{tail.text}\n{head.text}", Framing.PEM_JOIN, segments)
