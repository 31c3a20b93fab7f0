"""The privacy scrub: what of the collection environment a trace text shows, besides credentials.

Categories: e-mail addresses, private IPv4 addresses, internal host names (`ip-10-0-3-17.ec2.internal`,
`*.svc.cluster.local`, `*.internal`), URLs on those hosts, home directories (`/home/<user>`,
`/Users/<user>`), and `operator` values (the traces root's bucket and prefix, the exporting
machine's host and user name, configured literals and regexes). Placeholders are kept: the
documentation domains and ranges (`example.com|org|net`, `.test`, `.invalid`, 192.0.2.0/24,
198.51.100.0/24, 203.0.113.0/24), loopback and `0.0.0.0`, names every cloud or container has
(`host.docker.internal`, `metadata.google.internal`, `kubernetes.default.svc.cluster.local`,
169.254.169.254) and the generic users of images and CI (`/home/user`, `ubuntu`, `runner`, ...).

Like the secret scan, cost follows matches: one vectorised regex picks the texts holding anything
of any category; Python reads only those. Reports hold counts, never a value or its hash (an
e-mail's hash is as good as the e-mail to anyone with a list); replacements are tokens
(`[EMAIL-1]`) numbered in the order values are first met, the same value the same token.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from trace_assets.secret_scan.verdicts import PrivateCategory

TOKEN_NAMES = {
    PrivateCategory.EMAIL: "EMAIL",
    PrivateCategory.PRIVATE_IP: "IP",
    PrivateCategory.INTERNAL_HOST: "HOST",
    PrivateCategory.INTERNAL_URL: "URL",
    PrivateCategory.HOME_PATH: "HOME",
    PrivateCategory.OPERATOR: "OPERATOR",
}
MIN_LITERAL_CHARS = 3  # shorter operator literals would replace pieces of ordinary words
# User names of images, CI runners and docs: in a home path, a placeholder; as the machine's user, not scrubbed.
GENERIC_USERS = frozenset(
    {"user", "username", "ubuntu", "runner", "node", "app", "vscode", "jovyan", "ec2-user", "admin", "root"}
    | {"test", "guest", "me", "you", "your-user", "yourname", "name", "docker", "coder", "codespace", "runneradmin"}
)
_PLACEHOLDER_DOMAIN = re.compile(
    r"(?:^|\.)(?:example\.(?:com|org|net)|[^.]+\.(?:test|example|invalid|localhost)|localhost)$", re.IGNORECASE
)
# `git@github.com:org/repo.git` is an SSH remote, not a person's address; nor are the no-reply ones.
_SERVICE_MAILBOXES = frozenset({"git", "noreply", "no-reply", "donotreply", "do-not-reply"})
_GENERIC_HOSTS = frozenset({"host.docker.internal", "gateway.docker.internal", "metadata.google.internal"})
_GENERIC_HOST_SUFFIXES = ("kubernetes.default.svc.cluster.local", "kube-dns.kube-system.svc.cluster.local")
_DOC_NETWORKS = tuple(
    ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "169.254.169.254/32")
)
_PRIVATE_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16")
)

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
# ASCII digits and word boundaries (`[0-9]`, `(?-u:\b)`): Rust's Unicode `\d` takes `10.٠.0.1`, which
# is no address (`ipaddress` refused it: a crash), and Unicode classes cost compile time at every batch.
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_PRIVATE_IP = (
    rf"(?:10\.{_OCTET}|172\.(?:1[6-9]|2[0-9]|3[01])|192\.168|100\.(?:6[4-9]|[7-9][0-9]|1[01][0-9]|12[0-7])|169\.254)"
    rf"\.{_OCTET}\.{_OCTET}"
)
# The domains of private names, as every internal host ends (`.local` covers `cluster.local`).
_INTERNAL_SUFFIXES = (".internal", ".local", ".lan", ".corp", ".home.arpa")
_INTERNAL_SUFFIX = "(?:" + "|".join(re.escape(suffix) for suffix in _INTERNAL_SUFFIXES) + ")"
# The cluster domain names hosts by itself; `.internal` with two labels before it (`x.ec2.internal`)
# or a digit or hyphen in the name, and `.local`, `.lan`, `.corp`, `.home.arpa` with a digit or hyphen
# (`devbox-3.local`): `threading.local` and `self.internal` are code.
_INTERNAL_HOST = (
    rf"(?:{_LABEL}\.)+cluster\.local|(?:{_LABEL}\.){{2,}}internal"
    rf"|(?:{_LABEL}\.)*[A-Za-z0-9]*[0-9-][A-Za-z0-9-]*{_INTERNAL_SUFFIX}"
)
_HOST = rf"(?:{_INTERNAL_HOST}|{_PRIVATE_IP})"
# Rust syntax, run vectorised on the candidates; what a lookaround would say is checked on each
# match's neighbours (`_BEFORE`, `_AFTER`): a version (`1.10.0.3.17`), a longer name, a call.
_PATTERNS = {
    PrivateCategory.INTERNAL_URL: (
        rf"[A-Za-z][A-Za-z0-9+.-]{{1,20}}://(?:[^\s/@\"'<>]{{1,64}}@)?{_HOST}(?::[0-9]{{1,5}})?(?:/[^\s\"'<>`]*)?"
    ),
    PrivateCategory.EMAIL: rf"[A-Za-z0-9][A-Za-z0-9._%+-]{{0,63}}@(?:{_LABEL}\.)+[A-Za-z]{{2,24}}",
    PrivateCategory.INTERNAL_HOST: _INTERNAL_HOST,
    PrivateCategory.PRIVATE_IP: _PRIVATE_IP,
    PrivateCategory.HOME_PATH: r"(?:/home|/Users)/[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}",
}
# A literal every match of the category holds: its regex runs only on the texts holding one (an
# internal host's labels are slow to try at every position: 16 ms against 1 over the benchmark's texts).
_HOLDS = {PrivateCategory.INTERNAL_HOST: list(_INTERNAL_SUFFIXES)}
_BEFORE = {
    PrivateCategory.INTERNAL_HOST: re.compile(r"[A-Za-z0-9_.-]\Z"),
    PrivateCategory.PRIVATE_IP: re.compile(r"[0-9.]\Z"),
}
_AFTER = {
    PrivateCategory.EMAIL: re.compile(r"[A-Za-z0-9-]"),
    PrivateCategory.INTERNAL_HOST: re.compile(r"[A-Za-z0-9_(-]|\.[A-Za-z0-9]"),
    PrivateCategory.PRIVATE_IP: re.compile(r"[0-9]|\.[0-9]"),
}
# Two vectorised tests for "holds anything of any category": an e-mail's `@`, and the rest. As one
# regex they ran at a quarter of their joint speed (the benchmark's rows, one core).
_CANDIDATES = (
    rf"@{_LABEL}\.[A-Za-z]",
    rf"(?-u:\b){_PRIVATE_IP}|{_INTERNAL_SUFFIX}(?-u:\b)|/home/|/Users/",
)


@dataclass(frozen=True)
class PrivacyOptions:
    """The operator's own values, always scrubbed: literals (matched whole, any case) and regexes."""

    literals: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    _operator: re.Pattern[str] | None = field(init=False, default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        short = [literal for literal in self.literals if len(literal) < MIN_LITERAL_CHARS]
        if short:
            raise ValueError(f"scrub literals must be at least {MIN_LITERAL_CHARS} characters ({len(short)} are not)")
        for pattern in self.patterns:
            try:
                re.compile(pattern)
                pl.select(pl.lit("").str.contains(pattern))
            except (re.error, pl.exceptions.ComputeError) as error:
                raise ValueError(f"scrub pattern {pattern!r} is not a valid regex: {error}") from None
        alternatives = [_whole(literal) for literal in sorted(set(self.literals), key=len, reverse=True)]
        alternatives += [f"(?:{pattern})" for pattern in self.patterns]
        if alternatives:
            object.__setattr__(self, "_operator", re.compile("|".join(alternatives), re.IGNORECASE))

    @property
    def operator(self) -> re.Pattern[str] | None:
        return self._operator


def _whole(literal: str) -> str:
    """A literal not inside a longer word: `acme` in `acme-traces`, not in `acmeish`."""
    escaped = re.escape(literal)
    before = r"(?<![A-Za-z0-9])" if literal[0].isalnum() else ""
    after = r"(?![A-Za-z0-9])" if literal[-1].isalnum() else ""
    return before + escaped + after


def operator_literals(bucket: str | None, prefix: str, host: str, user: str, extra: Iterable[str]) -> tuple[str, ...]:
    """The values naming the operator: the traces root's bucket and prefix, the machine's host name
    (and its first label) and user name unless generic (`localhost`, `root`), and `extra`."""
    found = [bucket or "", prefix.strip("/")]
    if host.lower() not in ("localhost", "localhost.localdomain"):
        found += [host, host.split(".")[0]]
    if user.lower() not in GENERIC_USERS:
        found.append(user)
    # found values too short to scrub safely are left out; configured ones are refused (PrivacyOptions)
    values = {v.strip() for v in found if len(v.strip()) >= MIN_LITERAL_CHARS} | {v.strip() for v in extra}
    return tuple(sorted(values))


def _is_placeholder(category: PrivateCategory, value: str) -> bool:
    if category is PrivateCategory.EMAIL:
        local, domain = value.rsplit("@", 1)
        return _PLACEHOLDER_DOMAIN.search(domain) is not None or local.lower() in _SERVICE_MAILBOXES
    if category is PrivateCategory.PRIVATE_IP:
        address = ipaddress.ip_address(value)
        return any(address in network for network in _DOC_NETWORKS) or not any(
            address in network for network in _PRIVATE_NETWORKS
        )
    if category is PrivateCategory.INTERNAL_HOST:
        lowered = value.lower()
        return lowered in _GENERIC_HOSTS or lowered.endswith(_GENERIC_HOST_SUFFIXES)
    if category is PrivateCategory.HOME_PATH:
        return value.rsplit("/", 1)[1].lower() in GENERIC_USERS
    return False


@dataclass(frozen=True)
class PrivateMatch:
    """One value in a text: what publishing replaces (`value`) and the token's category."""

    category: PrivateCategory
    value: str
    placeholder: bool


class PrivacyFinder:
    """The private values of a batch of texts: one vectorised pass picks the candidates, each
    category's regex runs vectorised on those, Python checks each match's neighbours only."""

    def __init__(self, options: PrivacyOptions | None = None, wanted: Iterable[PrivateCategory] | None = None) -> None:
        """`wanted`: the categories whose values are used. When that is `operator` alone (a
        redaction that keeps the rest), only operator values are looked for: they win over any
        other value they overlap, so they are the very ones a search of every category finds."""
        self.options = options or PrivacyOptions()
        self.patterns_regex = "|".join(f"(?:{pattern})" for pattern in self.options.patterns)
        self.operator_only = wanted is not None and set(wanted) <= {PrivateCategory.OPERATOR}

    def _holds_operator(self) -> pl.Expr:
        """Operator literals as one case-insensitive regex of their own, their regexes as another.
        Joined with the e-mail test they slowed it sixfold; alone, a few literals (a bucket, a prefix,
        a host and a user) are the regex engine's SIMD literal search, 10x Aho-Corasick's
        `contains_any`, and from about ten on the two run alike."""
        text = pl.col("text")
        literals = "|".join(re.escape(literal) for literal in self.options.literals)
        holds = text.str.contains(f"(?i:{literals})") if literals else pl.lit(False)
        return holds | text.str.contains(self.patterns_regex) if self.patterns_regex else holds

    def candidates(self, texts: pl.DataFrame) -> pl.DataFrame:
        if self.operator_only:
            return texts.filter(self._holds_operator()) if self.options.operator is not None else texts.clear()
        holds = pl.any_horizontal([pl.col("text").str.contains(pattern) for pattern in _CANDIDATES])
        if self.options.operator is not None:
            holds = holds | self._holds_operator()
        return texts.filter(holds)

    def find(self, texts: pl.DataFrame) -> list[tuple[int, PrivateMatch]]:
        """(text_id, match) for every value in `texts` (text_id, text), in text then position order;
        where two overlap, operator values win, then a URL over its host or address."""
        candidates = self.candidates(texts).select("text_id", "text")
        if candidates.is_empty():
            return []
        by_id = dict(candidates.iter_rows())
        spans: dict[int, list[tuple[int, int, PrivateMatch]]] = {}
        for text_id, category, start, value in self._located(candidates, by_id):
            taken = spans.setdefault(text_id, [])
            if not any(s < start + len(value) and start < e for s, e, _ in taken):
                taken.append(
                    (start, start + len(value), PrivateMatch(category, value, _is_placeholder(category, value)))
                )
        return [(text_id, m) for text_id in sorted(spans) for _, _, m in sorted(spans[text_id], key=lambda t: t[0])]

    def matches(self, text: str) -> list[PrivateMatch]:
        """One text's values, in order."""
        frame = pl.DataFrame({"text_id": [0], "text": [text]}, schema={"text_id": pl.UInt32, "text": pl.String})
        return [match for _, match in self.find(frame)]

    def _located(
        self, candidates: pl.DataFrame, by_id: dict[int, str]
    ) -> Iterator[tuple[int, PrivateCategory, int, str]]:
        """(text_id, category, start, value) of each match that its neighbours do not rule out."""
        operator = self.options.operator
        if operator is not None:
            holding = candidates.filter(self._holds_operator())
            for text_id, text in holding.iter_rows():
                for found in operator.finditer(text):
                    if found.end() > found.start():
                        yield text_id, PrivateCategory.OPERATOR, found.start(), found.group(0)
        for category, pattern in () if self.operator_only else _PATTERNS.items():
            searched = (
                candidates.filter(pl.col("text").str.contains_any(_HOLDS[category]))
                if category in _HOLDS
                else candidates
            )
            extracted = (
                searched.select("text_id", pl.col("text").str.extract_all(pattern).alias("value"))
                .explode("value")
                .drop_nulls("value")
            )
            cursor: dict[int, int] = {}
            for text_id, value in extracted.iter_rows():
                text = by_id[text_id]
                start = text.find(value, cursor.get(text_id, 0))
                cursor[text_id] = start + len(value)
                before, after = _BEFORE.get(category), _AFTER.get(category)
                if before is not None and before.search(text, max(start - 1, 0), start):
                    continue
                if after is not None and after.match(text, start + len(value)):
                    continue
                yield text_id, category, start, value


_ORIGIN = ("row_id", "trial_name", "column")
TRIALS_LISTED = 100  # trials a report lists with their tokens, the first met; the rest are counted
TOKENS_LISTED = 20  # tokens listed per trial and category; the rest are counted


class PrivacyScanner:
    """Counts per category over batches of texts; keeps counts, sets of ids and, for the first
    TRIALS_LISTED trials holding a value, their tokens per category: never a value."""

    def __init__(self, options: PrivacyOptions | None = None) -> None:
        self._finder = PrivacyFinder(options)
        self.tokens = Tokens()  # the scope's numbering, which publishing's redaction goes on with
        self._counts = {c: {"matches": 0, "placeholders": 0} for c in PrivateCategory}
        self._rows: dict[PrivateCategory, set[int]] = {c: set() for c in PrivateCategory}
        self._trials: dict[PrivateCategory, set[str]] = {c: set() for c in PrivateCategory}
        self._columns: dict[PrivateCategory, dict[str, int]] = {c: {} for c in PrivateCategory}
        self._values: dict[PrivateCategory, set[int]] = {c: set() for c in PrivateCategory}  # hash(), in memory only
        # trial -> category -> its tokens, in the order met (a dict as an ordered set)
        self._listed: dict[str, dict[PrivateCategory, dict[str, None]]] = {}

    def find(self, texts: pl.DataFrame) -> list[tuple[int, PrivateMatch]]:
        """The values in texts, no tally touched (a thread may find while another batch is added)."""
        return self._finder.find(texts)

    def add(self, texts: pl.DataFrame, found: list[tuple[int, PrivateMatch]]) -> None:
        """Add what `find` found in texts (text_id, row_id, trial_name, column, text) to the
        tallies, numbering new values' tokens."""
        if not found:
            return
        holding = texts.filter(
            pl.col("text_id").is_in(list({text_id for text_id, _ in found}))
        )  # not every text's origin
        origin = dict(
            zip(
                holding["text_id"].to_list(),
                holding.select([pl.col(c) if c in texts.columns else pl.lit(None) for c in _ORIGIN]).iter_rows(),
            )
        )
        for text_id, match in found:
            row_id, trial_name, column = origin[text_id]
            counts = self._counts[match.category]
            counts["matches"] += 1
            if match.placeholder:
                counts["placeholders"] += 1
                continue
            token = self.tokens.name(match)
            self._values[match.category].add(hash(match.value))
            self._rows[match.category].add(row_id)
            by_column = self._columns[match.category]
            by_column[str(column)] = by_column.get(str(column), 0) + 1
            if trial_name is None:
                continue
            self._trials[match.category].add(trial_name)
            listed = self._listed.get(trial_name)
            if listed is None and len(self._listed) < TRIALS_LISTED:
                listed = self._listed[trial_name] = {}
            if listed is not None:
                listed.setdefault(match.category, {})[token] = None

    @property
    def trials(self) -> set[str]:
        """Every trial holding a private value (not a placeholder), in any category."""
        return set().union(*self._trials.values())

    def report(self) -> dict[str, Any]:
        """Per category: matches, placeholders among them, distinct values, rows and trials holding
        one; then the listed trials, by name, with their tokens per category."""
        listed = [
            {
                "trial_name": trial,
                "categories": {
                    str(c): {"values": len(tokens), "tokens": list(tokens)[:TOKENS_LISTED]}
                    for c, tokens in sorted(categories.items())
                },
            }
            for trial, categories in sorted(self._listed.items())
        ]
        return {
            "categories": {
                str(c): {
                    **self._counts[c],
                    "values": len(self._values[c]),
                    "rows": len(self._rows[c]),
                    "trials": len(self._trials[c]),
                    "columns": dict(sorted(self._columns[c].items())),
                }
                for c in PrivateCategory
            },
            "trials": listed,
            "trials_omitted": len(self.trials) - len(listed),
        }


# What one scope's token numbering records: per category, the digests of its values in token order.
Assignment = dict[str, list[str]]


class Tokens:
    """Replacement tokens for one scope: the same value the same token, numbered per category in the
    order the scan first meets values (rows in staged order, then session files). The scan assigns
    them, and publishing's redaction starts from the scan's assignment (`assigned`), so the report's
    tokens are the published ones however publishing cuts its batches. Values are held by sha256."""

    def __init__(self, assigned: Assignment | None = None) -> None:
        self._tokens: dict[str, str] = {}
        self._numbered: dict[PrivateCategory, list[str]] = {c: [] for c in PrivateCategory}  # digests, in order
        for category, digests in (assigned or {}).items():
            for digest in digests:
                self._add(PrivateCategory(category), digest)

    def _add(self, category: PrivateCategory, digest: str) -> str:
        numbered = self._numbered[category]
        numbered.append(digest)
        token = self._tokens[digest] = f"[{TOKEN_NAMES[category]}-{len(numbered)}]"
        return token

    def name(self, match: PrivateMatch) -> str:
        """`[EMAIL-1]`: the value's token, assigned when first asked for."""
        digest = _digest(match.category, _named(match))
        token = self._tokens.get(digest)
        return token if token is not None else self._add(match.category, digest)

    def token(self, match: PrivateMatch) -> str:
        """The value's replacement: its token; for a home path the folder above stays (`/home/[HOME-1]`),
        as the user is the value."""
        prefix = match.value.rpartition("/")[0] + "/" if match.category is PrivateCategory.HOME_PATH else ""
        return prefix + self.name(match)

    def assigned(self) -> Assignment:
        """The numbering so far, as `Tokens(assigned)` takes it."""
        return {str(category): list(digests) for category, digests in self._numbered.items() if digests}


def _named(match: PrivateMatch) -> str:
    """What a token stands for: the value in lower case; for a home path, the user as written."""
    if match.category is PrivateCategory.HOME_PATH:
        return match.value.rpartition("/")[2]
    return match.value.lower()


def _digest(category: PrivateCategory, name: str) -> str:
    return hashlib.sha256(f"{category}\0{name}".encode()).hexdigest()[:32]
