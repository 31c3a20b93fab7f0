"""Finding matches of every kind in a batch of texts, in time that grows with matches, not kinds.

1. Prefilter (vectorised): one Aho-Corasick pass over every text for the kinds' literals
   (case-insensitive); a text with none is done.
2. Each rule's regex runs (vectorised, polars' Rust regex) only on the texts holding one of its
   literals.
3. Texts with a hit also get their normalised views (`normalise.py`), which go through 1-2 too.
4. Each match is located in its text and mapped back to raw offsets, so redaction replaces the
   raw bytes whole; where matches overlap, the longer view of a kind and the more specific kind win.
"""

from __future__ import annotations

import base64
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from trace_assets.core.defaults import DEFAULT_WRAP_WIDTH
from trace_assets.secret_scan.judge import entropy_bits
from trace_assets.secret_scan.kinds import Judged, SecretKind
from trace_assets.secret_scan.normalise import (
    ANSI_ESCAPE,
    MAX_JSON_LAYERS,
    TOKEN_CHARS,
    Framing,
    Normaliser,
    View,
    joined,
)
from trace_assets.secret_scan.pem import PEM_MARKER

MAX_BLOBS_PER_BATCH = 4096  # decoding is bounded: blobs per batch, size, count per text and depth
_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----")


def _encoded_triggers(literal: str) -> set[str]:
    """How base64 of a text starting with `literal` starts (the characters its bytes fully decide),
    and the literal URL-encoded when that changes it."""
    triggers = {urllib.parse.quote(literal, safe="")} - {literal}
    if len(literal) >= 3:
        triggers.add(base64.b64encode(literal.encode()).decode()[: len(literal) * 8 // 6])
    return triggers


# Base64 of `-----BEGIN`, of a docker config (`{"auths"`) and of a JWT (`eyJ`).
_BLOB_TRIGGERS = {"LS0tLS1CRUdJT", "eyJhdXRocyI", "ZXlK"}
# Where a token may be cut before its literal: a JWT's header (`eyJ`), before the `.eyJ` the prefilter wants.
_CUT_TOKEN_STARTS = {"eyj"}
# Below this many bytes of text a batch's candidates are three searches, each led by Rust's literal
# prefilter, not one alternation: polars compiles a regex for each query, and the alternation's lazy
# DFA built its states anew each time, 10-25 ms a batch however small (a one-trial scope's rows:
# 24 against 5 ms for the three); past about 2 MB (generated traces) reading the text once is faster
# (44 against 78 ms at 12 MB).
_SPLIT_SEARCH_BELOW = 2 << 20
_RUST_WORD_START = r"(?-u:\b)"  # an ASCII word boundary, as the prefilter's literals are ASCII
_URL_RUN = r"[A-Za-z0-9._~+-]*(?:%[0-9A-Fa-f]{2}[A-Za-z0-9._~+-]*){2,}"
# The first line of the rest of a PEM block cut between two messages (a prompt or a note may come first).
_BASE64_LINE = re.compile(r"(?m)^[ \t]*[A-Za-z0-9+/=]{8,}[ \t]*\r?$")
# A credential word shortly before a match on its line (`GITHUB_TOKEN=`, `"api_key": "`, `Bearer `):
# without one, a token that fails its kind's exact shape is a near miss, not a credential.
_CONTEXT = re.compile(r"(?i:key|token|secret|passw|pwd|auth|bearer|cred|session|private|pat\b)")
CONTEXT_CHARS = 48


def _normalised_expr(text: pl.Expr, wrap_width: int) -> pl.Expr:
    """A vectorised over-approximation of `Normaliser.normalised`: only used to pick texts worth it."""
    escapes, plain = ["\\\\", "\\n", "\\t", "\\r", '\\"', "\\/"], ["\\", "\n", "\t", "\r", '"', "/"]
    for _ in range(MAX_JSON_LAYERS):
        text = text.str.replace_many(escapes, plain)
    text = text.str.replace_all("\\u001b", "\x1b", literal=True).str.replace_all(ANSI_ESCAPE, "")
    text = text.str.replace_all(r"(?m)^ {0,8}\d{1,9}\t", "").str.replace_many(["$\n", "^I"], ["\n", "\t"])
    if wrap_width > 0:
        text = text.str.replace_all(rf"(?m)^([^\n]{{{wrap_width}}})\r?\n", "${1}")
    return text


def _literal_alternatives(
    literals: set[str], boundary: str, words: frozenset[str] = frozenset(), bounded: bool = True
) -> str:
    """Short literals that start with a word character (`sk-`, `hf_`) must start a word, follow a
    JSON `\\n`/`\\t` escape or an ANSI colour (`\\x1b[01;31m`), so `task-` or `disk-` do not count;
    so must `words` (the vendor rules' names: `figma` in `configmap` is no vendor)."""
    alternatives = []
    for literal in sorted(literals, key=lambda lit: (-len(lit), lit)):
        escaped = re.escape(literal)
        if bounded and _must_start_word(literal, words):
            alternatives.append(f"{_word_start(boundary)}{escaped}")
        else:
            alternatives.append(escaped)
    return "|".join(alternatives)


def _must_start_word(literal: str, words: frozenset[str]) -> bool:
    short = len(literal) <= 4 and literal[0].isalnum() and "~" not in literal  # Azure's `Q~` sits inside its secret
    return short or literal in words


def _word_start(boundary: str) -> str:
    return rf"(?:{boundary}|\\[nt]|\[[0-9;]*[mK])"


def _any_literal(literals: set[str], words: frozenset[str]) -> str:
    """Any of `literals` (any case), those that must start a word sharing one copy of that prefix:
    one per literal (~600 vendor words) made the lazy DFA's states huge, rebuilt for every batch
    (4.8x the time of this form)."""
    return f"(?i:{'|'.join(_literal_parts(literals, words))})"


def _literal_parts(literals: set[str], words: frozenset[str]) -> list[str]:
    """`_any_literal`'s two alternatives: the literals that must start a word, behind one copy of
    that prefix, and the rest."""
    bounded = {literal for literal in literals if _must_start_word(literal, words)}
    parts = (
        [f"{_word_start(_RUST_WORD_START)}(?:{_literal_alternatives(bounded, '', bounded=False)})"] if bounded else []
    )
    if literals - bounded:
        parts.append(_literal_alternatives(literals - bounded, "", bounded=False))
    return parts


def _candidate_alternatives(literals: set[str], triggers: set[str], words: frozenset[str]) -> tuple[str, ...]:
    """A text holds a literal when it matches one of these: the literals that must start a word,
    the other literals (any case), the blob triggers."""
    blobs = "|".join(re.escape(trigger) for trigger in sorted(triggers))
    return (*(f"(?i:{part})" for part in _literal_parts(literals, words)), blobs)


def _line_join_regex(literals: set[str], triggers: set[str], escaped_newline: bool, shared_start: bool = False) -> str:
    # (Rust syntax: the normaliser runs it with polars too.)
    """A literal, token characters up to the end of its line, and a line starting with one more:
    where a token cut by a line break at any width may start. `escaped_newline`: also a JSON `\\n`,
    escaped once to three times. `shared_start`: the literals as `_any_literal` joins them (one copy
    of the word-start prefix, a smaller lazy DFA), for a test only: the same texts match, but which
    alternative wins at a position may differ, and the normaliser reads the matches."""
    blobs = "|".join(re.escape(trigger) for trigger in sorted(triggers))
    newline = r"(?:\r?\n|(?:\\{1,3}r)?\\{1,3}n)" if escaped_newline else r"\r?\n"
    # a line ending in five dashes is no cut token: `KEY-----`, a PEM marker, holds Mailgun's `key-`
    run = f"(?:[{TOKEN_CHARS}]*[A-Za-z0-9_+/=.~]-{{0,4}})?"
    literal = (
        _any_literal(literals, frozenset())
        if shared_start
        else f"(?i:{_literal_alternatives(literals, _RUST_WORD_START)})"
    )
    return f"(?:{literal}|{blobs}){run}{newline}[{TOKEN_CHARS}]"


@dataclass
class Match:
    """One located match: its kind, the secret as normalised, its raw spans (source text -> span)."""

    kind: SecretKind
    order: int
    secret: str
    framing: str
    spans: dict[int, tuple[int, int]]
    may_be_live: bool = True  # its rule's: False caps the verdict at `unverified`
    context: bool = True  # a keyword rule's, or a credential word just before it (see `_CONTEXT`)

    @property
    def source(self) -> int:
        return min(self.spans)


class Finder:
    def __init__(self, kinds: Sequence[SecretKind], wrap_width: int = DEFAULT_WRAP_WIDTH) -> None:
        self.kinds = tuple(kinds)
        self.rules = [(order, kind, rule) for order, kind in enumerate(kinds) for rule in kind.rules]
        literals = {literal.lower() for _, _, rule in self.rules for literal in rule.literals}
        triggers = set(_BLOB_TRIGGERS)
        # base64 and URL forms of our own kinds' literals (a vendor rule's would be noise)
        for _, kind, rule in self.rules:
            for literal in rule.literals if kind.specific else ():
                triggers |= _encoded_triggers(literal)
        self.literals = sorted(literals | triggers, key=lambda lit: (-len(lit), lit))
        self.literal_rules = pl.DataFrame(
            [(literal.lower(), index) for index, (_, _, rule) in enumerate(self.rules) for literal in rule.literals],
            schema={"literal": pl.String, "rule": pl.UInt32},
            orient="row",
        ).unique()
        self.rule_regexes = pl.DataFrame(
            [(index, rule.search_regex, rule.has_secret_group) for index, (_, _, rule) in enumerate(self.rules)],
            schema={"rule": pl.UInt32, "regex": pl.String, "grouped": pl.Boolean},
            orient="row",
        )
        self.unfiltered_rules = [index for index, (_, _, rule) in enumerate(self.rules) if not rule.literals]
        specific = {literal.lower() for _, kind, rule in self.rules if kind.specific for literal in rule.literals}
        words = frozenset(literal for literal in literals - specific if literal[0].isalnum())
        self.candidate_alternatives = _candidate_alternatives(literals, triggers, words)
        self.candidate_regex = "|".join(self.candidate_alternatives)  # the same, one alternation
        self.wrap_width = wrap_width
        # Tokens of known formats and blobs may be cut by a line break; keyword values are not joined.
        token_literals = _CUT_TOKEN_STARTS | {
            literal.lower()
            for _, kind, rule in self.rules
            if kind.judged is Judged.TOKEN and kind.specific
            for literal in rule.literals
        }
        self.line_join_regex = _line_join_regex(token_literals, triggers, escaped_newline=True, shared_start=True)
        self.normaliser = Normaliser(
            wrap_width, triggers, _line_join_regex(token_literals, triggers, escaped_newline=False)
        )
        self.blob_regex = (
            "(?:" + "|".join(re.escape(t) for t in sorted(triggers, key=len, reverse=True)) + ")[A-Za-z0-9+/_-]+={0,2}"
        )

    # ------------------------------------------------------------ vectorised matching

    def candidates(self, texts: pl.DataFrame) -> pl.DataFrame:
        """The texts holding at least one literal: the only ones filtered rules and views look at."""
        text = pl.col("text")
        if texts["text"].str.len_bytes().sum() < _SPLIT_SEARCH_BELOW:
            return texts.filter(pl.any_horizontal([text.str.contains(regex) for regex in self.candidate_alternatives]))
        return texts.filter(text.str.contains(self.candidate_regex))

    def _rule_matches(self, texts: pl.DataFrame, hits: pl.DataFrame) -> pl.DataFrame:
        """(text_id, rule, match, secret) for every rule match in `texts` (text_id, text); `hits` are its candidates."""
        pairs = (
            hits.select(
                "text_id",
                pl.col("text")
                .str.extract_many(self.literals, ascii_case_insensitive=True, overlapping=True)
                .alias("literal"),
            )
            .explode("literal")
            .select("text_id", pl.col("literal").str.to_lowercase())
            .unique()
            .join(self.literal_rules, on="literal")
            .select("text_id", "rule")
            .unique()
        )
        # Every (text, rule) pair in one vectorised call, each row with its rule's regex: rows of one
        # rule are adjacent, so polars compiles each regex once (a call and a join per rule took 3x).
        found = (
            pairs.sort("rule", "text_id")
            .join(self.rule_regexes, on="rule", maintain_order="left")
            .join(hits.select("text_id", "text"), on="text_id", maintain_order="left")
            .select("text_id", "rule", "grouped", pl.col("text").str.extract_all(pl.col("regex")).alias("match"))
            .explode("match")
            .drop_nulls("match")
            .with_row_index("order")
        )
        # A secret group is read per rule: a regex column makes `extract` 7x slower than one regex.
        match = pl.col("match")
        secrets = [found.filter(~pl.col("grouped")).with_columns(match.alias("secret"))]
        for (rule_index,), group in found.filter("grouped").group_by("rule"):
            regex = self.rules[rule_index][2].search_regex
            secrets.append(group.with_columns(pl.coalesce(match.str.extract(regex, 1), match).alias("secret")))
        filtered = pl.concat(secrets).sort("order").select(pl.col("text_id").cast(pl.UInt32), "rule", "match", "secret")
        frames = [filtered, *(self._extract(texts, rule_index) for rule_index in self.unfiltered_rules)]
        frames = [frame for frame in frames if frame.height]
        if not frames:
            return pl.DataFrame(
                schema={"text_id": pl.UInt32, "rule": pl.UInt32, "match": pl.String, "secret": pl.String}
            )
        return pl.concat(frames)

    def _extract(self, texts: pl.DataFrame, rule_index: int) -> pl.DataFrame:
        _, _, rule = self.rules[rule_index]
        found = (
            texts.select("text_id", pl.col("text").str.extract_all(rule.search_regex).alias("match"))
            .explode("match")
            .drop_nulls("match")
        )
        secret = pl.col("match")
        if rule.has_secret_group:
            secret = pl.coalesce(pl.col("match").str.extract(rule.search_regex, 1), pl.col("match"))
        return found.select(
            pl.col("text_id").cast(pl.UInt32),
            pl.lit(rule_index, pl.UInt32).alias("rule"),
            "match",
            secret.alias("secret"),
        )

    # ------------------------------------------------------------ views and locations

    def find(self, texts: pl.DataFrame) -> tuple[list[Match], dict[int, str]]:
        """Matches in `texts` (text_id, row_id, message, text), deduplicated; and the texts they are in, by id.

        Python touches only texts with a match: in the raw text, in its vectorised normalised form,
        or in a blob it holds.
        """
        candidates = self.candidates(texts)
        if candidates.is_empty() and not self.unfiltered_rules:  # nothing for any rule or view: 9 ms of queries
            return [], {}
        raw = self._rule_matches(texts, candidates)
        normalised = self._normalised_hits(candidates)
        blobs = self._blob_hits(candidates)
        ids = set(raw["text_id"].to_list()) | set(normalised) | {text_id for text_id, _, _ in blobs}
        pem_marked = candidates.filter(pl.col("text").str.contains(PEM_MARKER)) if "row_id" in texts.columns else None
        if pem_marked is not None:
            ids |= set(pem_marked["text_id"].to_list())
        matched = texts.filter(pl.col("text_id").is_in(list(ids))) if ids else texts.clear()
        by_id: dict[int, str] = dict(zip(matched["text_id"].to_list(), matched["text"].to_list()))
        raw_views = {text_id: View.raw(text, text_id) for text_id, text in by_id.items()}
        matches = self._locate(raw, raw_views)
        normalised_views = self.normaliser.normalised_many([raw_views[text_id] for text_id in normalised])
        unframed = [view for view in normalised_views if view is not None]
        views: list[View] = []
        for view, blobs_in_view in zip(unframed, self.normaliser.blobs(unframed)):
            views.append(view)
            for blob in blobs_in_view:  # a blob cut by wraps or escapes is whole only here
                views += self.normaliser.decoded(view, blob, Framing.BASE64)
        for text_id, blob, framing in blobs:
            views += self.normaliser.decoded(raw_views[text_id], blob, framing)
        if pem_marked is not None:
            views += self._pem_joins(pem_marked)
        if views:
            view_texts = pl.DataFrame(
                {"text_id": range(len(views)), "text": [view.text for view in views]},
                schema={"text_id": pl.UInt32, "text": pl.String},
            )
            view_hits = self.candidates(view_texts)
            matches += self._locate(self._rule_matches(view_hits, view_hits), dict(enumerate(views)))
        return _deduplicated(matches), by_id

    def _normalised_hits(self, candidates: pl.DataFrame) -> list[int]:
        """Texts whose normalised form (JSON unescaped, colours and `cat` prefixes gone, wraps joined)
        has a match; a text with a token cut by a line break is one whatever its join holds."""
        framed = candidates.select(
            "text_id", "text", pl.col("text").str.contains(self.line_join_regex).alias("joins")
        ).filter(
            pl.col("text").str.contains_any(["\\", "\t", "$\n", "^I", "\x1b"])
            | (pl.col("text").str.contains(rf"(?m)^[^\n]{{{self.wrap_width}}}\r?\n") if self.wrap_width > 0 else False)
            | pl.col("joins")
        )
        if framed.is_empty():
            return []
        joined_ids = set(framed.filter("joins")["text_id"].to_list())
        normalised = framed.select("text_id", _normalised_expr(pl.col("text"), self.wrap_width).alias("text"))
        hits = self.candidates(normalised)
        return sorted(set(self._rule_matches(hits, hits)["text_id"].to_list()) | joined_ids)

    def _blob_hits(self, candidates: pl.DataFrame) -> list[tuple[int, str, Framing]]:
        """(text id, blob, framing) for base64 blobs that start like a secret and URL-encoded runs."""
        found = candidates.select(
            "text_id",
            pl.col("text").str.extract_all(self.blob_regex).alias("base64"),
            pl.when(pl.col("text").str.contains("%", literal=True))
            .then(pl.col("text").str.extract_all(_URL_RUN))
            .alias("url"),
        )
        blobs = []
        for framing in (Framing.BASE64, Framing.URL):
            column = str(framing)
            for text_id, blob in (
                found.select("text_id", column).explode(column).drop_nulls(column).unique().iter_rows()
            ):
                blobs.append((text_id, blob, framing))
        return sorted(blobs)[:MAX_BLOBS_PER_BATCH]

    def _locate(self, found: pl.DataFrame, views: dict[int, View]) -> list[Match]:
        """Each match's position in its view (in order of appearance), mapped to raw spans."""
        located: list[Match] = []
        cursor: dict[tuple[int, int], int] = {}
        for text_id, rule_index, match, secret in found.iter_rows():
            view = views[text_id]
            order, kind, rule = self.rules[rule_index]
            start = view.text.find(match, cursor.get((text_id, rule_index), 0))
            if start < 0:
                continue
            cursor[(text_id, rule_index)] = start + len(match)
            if rule.min_entropy and entropy_bits(secret) < rule.min_entropy:
                continue
            inner = match.rfind(secret) if secret != match else 0
            if rule.refine is not None:
                refined = rule.refine(view.text, start, match, secret)
                if refined is None:
                    continue
                secret = refined  # a prefix of the secret as matched
            if (
                kind.judged is Judged.GENERIC
                and Framing.LINE_JOIN in view.framing
                and view.joined_within(start + inner, start + inner + len(secret))
            ):
                continue  # an assigned value never crosses a line break, wrapped or not
            spans = view.raw_spans(start + inner, start + inner + len(secret))
            # a vendor rule's regex is that vendor's whole format: its match needs no credential word
            context = (
                rule.has_secret_group
                or not kind.specific
                or _has_context(view.text, start)
                or bool(kind.rough_shape and kind.rough_shape(secret))
            )
            located.append(Match(kind, order, secret, view.framing, spans, rule.may_be_live, context))
        return located

    def _pem_joins(self, marked: pl.DataFrame) -> list[View]:
        """A PEM block cut at the end of one message and finished in a later one of the same row (the
        next observation, an agent's turn or a tool call between): joined with the next marked text."""
        by_row: dict[int, list[tuple[int, int, str]]] = {}
        for text_id, row_id, message, text in marked.select("text_id", "row_id", "message", "text").iter_rows():
            by_row.setdefault(row_id, []).append((message, text_id, text))
        joins = []
        for texts in by_row.values():
            texts.sort()
            for (_, text_id, text), (_, next_id, next_text) in zip(texts, texts[1:]):
                # the markers read the same escaped or not: views are built for a cut block only
                begins = list(_PEM_BEGIN.finditer(text))
                if not begins or _PEM_END.search(text, begins[-1].end()):
                    continue
                end = _PEM_END.search(next_text)
                first_begin = _PEM_BEGIN.search(next_text)
                if end is None or (first_begin is not None and first_begin.start() < end.start()):
                    continue
                view, next_view = self._unescaped(text_id, text), self._unescaped(next_id, next_text)
                begin = list(_PEM_BEGIN.finditer(view.text))[-1]
                end = _PEM_END.search(next_view.text)
                assert end is not None, "unescaping keeps the markers"
                rest = _BASE64_LINE.search(next_view.text, 0, end.start())
                joins.append(joined(view, begin.start(), next_view, end.end(), rest.start() if rest else 0))
        return joins

    def _unescaped(self, text_id: int, text: str) -> View:
        """A text as printed: JSON unescaped if it is escaped (a tool result inside JSON)."""
        raw = View.raw(text, text_id)
        return (self.normaliser.normalised(raw) or raw) if "\\" in text else raw


def _has_context(text: str, start: int) -> bool:
    """A credential word in the CONTEXT_CHARS before `start`, on its line."""
    line_start = text.rfind("\n", max(start - CONTEXT_CHARS, 0), start) + 1
    return _CONTEXT.search(text, max(line_start, start - CONTEXT_CHARS), start) is not None


def _deduplicated(matches: list[Match]) -> list[Match]:
    """Per raw text, where two matches overlap: the longer of one kind, the higher-ranked of two kinds.

    Two kinds of equal rank over the very same span (a DeepSeek key is also OpenAI-shaped) keep the
    later, more specific kind.
    """
    by_source: dict[int, list[int]] = {}
    for index, match in enumerate(matches):
        for source in match.spans:
            by_source.setdefault(source, []).append(index)
    dropped: set[int] = set()
    for indices in by_source.values():
        if len(indices) < 2:
            continue
        spans = {i: matches[i].spans for i in indices}
        for i in indices:
            for j in indices:
                if i == j or i in dropped or j in dropped:
                    continue
                if _beats(matches[j], spans[j], matches[i], spans[i], j < i):
                    dropped.add(i)
    return [match for index, match in enumerate(matches) if index not in dropped]


def _beats(winner: Match, winner_spans: dict, loser: Match, loser_spans: dict, winner_first: bool) -> bool:
    shared = set(winner_spans) & set(loser_spans)
    if not any(_overlap(winner_spans[s], loser_spans[s]) for s in shared):
        return False
    if winner.kind.rank != loser.kind.rank:
        return winner.kind.rank > loser.kind.rank
    if winner.kind.name == loser.kind.name:
        winner_size = sum(e - s for s, e in winner_spans.values())
        loser_size = sum(e - s for s, e in loser_spans.values())
        joins = (Framing.LINE_JOIN in winner.framing) != (Framing.LINE_JOIN in loser.framing)
        if joins and winner_size != loser_size and winner.kind.judged is Judged.TOKEN:
            return _join_beats(winner, loser)
        if winner_size != loser_size:
            return winner_size > loser_size
        if winner.may_be_live != loser.may_be_live:  # the exact credential variable's rule, not the loose one
            return winner.may_be_live
        return winner_first
    return winner_spans == loser_spans and winner.order > loser.order


def _join_beats(winner: Match, loser: Match) -> bool:
    """A token joined across a line break against the same kind's match cut at it: the joined one
    only when it has the kind's exact shape (a wrap cut the token), else the cut one (a line that
    merely ends with a token must not swallow the next line's first word)."""
    joined, cut = (winner, loser) if Framing.LINE_JOIN in winner.framing else (loser, winner)
    return (joined if _has_shape(joined) else cut) is winner


def _has_shape(match: Match) -> bool:
    shape = match.kind.shape
    return shape is None or bool(shape(match.secret))


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]
