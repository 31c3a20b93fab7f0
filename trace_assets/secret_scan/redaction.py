"""Redaction: replace the raw bytes of every finding with a chosen verdict by `[REDACTED:<kind>]`.

The raw span of a finding covers its whole secret however it was printed (wrapped, escaped,
numbered, encoded, split over two messages), so nothing of it is left; every other occurrence of
the same raw text or normalised secret is replaced too. Private values of the categories asked
for are replaced by their scope's tokens (`[EMAIL-1]`) in the same pass. Returns counts; the report
is not touched.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import polars as pl

from trace_assets.secret_scan.privacy import PrivacyFinder, PrivateCategory, Tokens
from trace_assets.secret_scan.scanner import (
    PLAIN_TEXT_COLUMNS,
    Judge,
    Replaceable,
    ScanOptions,
    compiled_finder,
    has_conversations,
    judged_matches,
    replaceables,
    scanned_texts,
)
from trace_assets.secret_scan.verdicts import Verdict

DEFAULT_REDACTED = frozenset({Verdict.LIVE, Verdict.UNVERIFIED})


class Redaction:
    """Reusable across batches: verdicts are cached once (the kinds are compiled once a process)."""

    def __init__(
        self,
        options: ScanOptions,
        verdicts: Collection[Verdict] = DEFAULT_REDACTED,
        private: Iterable[PrivateCategory] = (),
        tokens: Tokens | None = None,
    ) -> None:
        """`tokens`: the scope's numbering as the scan assigned it, which redaction goes on with."""
        self.verdicts = frozenset(verdicts)
        self.private = frozenset(private) if options.privacy is not None else frozenset()
        self._finder = compiled_finder(options)
        self._judge = Judge(options.allowlist, options.near_misses)
        self._privacy = PrivacyFinder(options.privacy, self.private)
        self._tokens = tokens if tokens is not None else Tokens()  # one scope's: rows and session files alike
        self.private_counts: dict[str, int] = {}

    def __call__(
        self, rows: pl.DataFrame, found: list[Replaceable] | None = None
    ) -> tuple[pl.DataFrame, dict[str, int]]:
        """The rows with the same schema (`rows` itself when nothing is replaced), and the matches
        replaced per kind (private values per category in `private_counts`, over every call).
        `found` is what a scan of these very rows found (see `SecretScanner.last_found`): then the
        finder does not read them again."""
        if not self.verdicts and not self.private:
            return rows, {}
        if found is None:
            _, matches, judgements, by_id, _ = judged_matches(self._finder, self._judge, rows, 0)
            found = replaceables(matches, judgements, by_id)
        counts: dict[str, int] = {}
        targets: dict[str, str] = {}
        for match in found:
            if match.verdict not in self.verdicts:
                continue
            counts[match.kind] = counts.get(match.kind, 0) + 1
            for piece, replacement in match.replacements():
                targets.setdefault(piece, replacement)
        if self.private:
            for _, private in self._privacy.find(scanned_texts(rows, 0)):
                if private.category in self.private and not private.placeholder:
                    targets.setdefault(private.value, self._tokens.token(private))
                    self.private_counts[private.category] = self.private_counts.get(private.category, 0) + 1
        if not targets:
            return rows, {}
        # Longest first, so a secret that contains another is replaced whole.
        ordered = sorted(targets, key=len, reverse=True)
        replacements = [targets[target] for target in ordered]

        def scrub(text: pl.Expr) -> pl.Expr:
            return text.str.replace_many(ordered, replacements, leftmost=True)

        columns = [scrub(pl.col(name)) for name in PLAIN_TEXT_COLUMNS if rows.schema.get(name) == pl.String]
        if has_conversations(rows):
            columns.append(
                pl.col("conversations").list.eval(pl.element().struct.with_fields(scrub(pl.field("content"))))
            )
        return rows.with_columns(columns), counts


def redact(
    rows: pl.DataFrame,
    options: ScanOptions | None = None,
    verdicts: Collection[Verdict] = DEFAULT_REDACTED,
    private: Iterable[PrivateCategory] = (),
) -> tuple[pl.DataFrame, dict[str, int]]:
    """One-off redaction of `rows`; see `Redaction`."""
    return Redaction(options or ScanOptions(), verdicts, private)(rows)
