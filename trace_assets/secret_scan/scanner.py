"""Credential-shaped strings in trace rows: find them fast, judge each one, never repeat it.

Finding is vectorised: every text (each message content, the instruction, the verifier output)
goes through polars' Rust regex engine once per pattern. Python runs only per distinct match, to
judge it:

- `placeholder`: its fingerprint is allowlisted, or it has a sample's tells (`...`, `xxxx`,
  EXAMPLE, `your_`, `<...>`, six equal or ascending characters, far too few distinct characters;
  for a JWT, claims like those, as in jwt.io's `"sub": "1234567890"`).
- `live`: the exact format of its kind, e.g. a GitHub token whose last six characters are the
  CRC32 of the rest, an AWS key id in AWS's base32, an OpenAI key carrying `T3BlbkFJ`, a JWT
  whose header and payload decode to JSON with an `alg`. An extra pattern is the user's own
  exact format, so its non-placeholder matches are `live`. PEM blocks: see `analyse_pem_block`.
- `unverified`: the rough shape only; it may be real, so it is redacted too.

The run's verdict is the worst of its findings: `live`, then `unverified`, then
`placeholders_only`, else `clean`. The report describes the rows as read, in counts and
fingerprints: a finding is named by the sha256 of the matched text and a preview of at most six
of its characters.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import re
import textwrap
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import polars as pl
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

LIVE, UNVERIFIED, PLACEHOLDER = "live", "unverified", "placeholder"
VERDICTS = (LIVE, UNVERIFIED, PLACEHOLDER)
REDACTED_VERDICTS = (LIVE, UNVERIFIED)
FINDINGS_CAP = 1000
PRIVATE_KEY = "private_key"
FINGERPRINT_CHARS = 16

# Where a text came from: its row, and the column within the row.
_ROW_ORIGIN = ("row_id", "trial_name", "task", "trace_source")
_TEXT_ORIGIN = (*_ROW_ORIGIN, "column")
_PLAIN_TEXT_COLUMNS = ("instruction", "verifier_output")
_MATCH_PREFIX = "match:"


@dataclass(frozen=True)
class SecretPattern:
    """A named regex in Rust `regex` syntax (no lookaround, no backreferences).

    When the regex has a capturing group, group 1 is the secret and the rest is context that
    must be present but is neither fingerprinted nor redacted.
    """

    name: str
    regex: str

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"secret pattern name {self.name!r} must be lower_snake_case")
        try:
            matches_empty = pl.select(pl.lit("").str.contains(self.regex)).item()
        except pl.exceptions.ComputeError as error:
            raise ValueError(f"secret pattern {self.name!r} is not a valid regex: {error}") from None
        if matches_empty:
            raise ValueError(f"secret pattern {self.name!r} matches the empty string")

    @cached_property
    def has_secret_group(self) -> bool:
        return bool(pl.select(pl.lit("").str.extract_groups(self.regex)).to_series().struct.fields)


# PEM: real newlines or JSON-escaped ones (a key printed inside a JSON string), base64 lines,
# `Proc-Type:`-style headers, and the placeholder lines samples use (`...`, `<your key>`).
_PEM_LABEL = r"(?:[A-Z0-9]+ )*"
_PEM_NEWLINE = r"(?:\r?\n|(?:\\r)?\\n)"
_PEM_WORD = r"[A-Za-z0-9+/=._*<>\[\]()…]+"
_PEM_LINE = rf"[ \t]*(?:{_PEM_WORD}(?: {_PEM_WORD})*|[A-Za-z-]+: [^\r\n\\]*)?[ \t]*"
# One line per row of base64; a last line cut off by the end of the text (truncated output) still
# belongs to the block. Or all on one line, base64 chunks separated by spaces.
_PEM_LINES = rf"[ \t]*{_PEM_NEWLINE}(?:{_PEM_LINE}{_PEM_NEWLINE})*(?:{_PEM_LINE}$)?"
_PEM_SPACED = r"(?:[ \t]+[A-Za-z0-9+/=]{16,})+[ \t]*"
_PEM_BODY = rf"(?:{_PEM_LINES}|{_PEM_SPACED})"
_PEM_BLOCK = rf"-----BEGIN {_PEM_LABEL}PRIVATE KEY-----{_PEM_BODY}?(?:-----END {_PEM_LABEL}PRIVATE KEY-----)?"
_PEM_MARKER = rf"-----(?:BEGIN|END) {_PEM_LABEL}PRIVATE KEY-----"

BUILTIN_PATTERNS: tuple[SecretPattern, ...] = (
    SecretPattern("jwt", r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),
    SecretPattern("aws_access_key_id", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    SecretPattern(
        "aws_secret_access_key",
        r"(?:(?i:secret_?access_?key)[\\\"'\s]*(?::|=>?)[\\\"'\s]*|\b(?:AKIA|ASIA)[A-Z0-9]{16}[\s,:;|\"'=]{1,8})"
        r"([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)",
    ),
    SecretPattern("openai_api_key", r"\bsk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{32,})"),
    SecretPattern("anthropic_api_key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    SecretPattern("hf_token", r"\bhf_[A-Za-z0-9]{34,}\b"),
    SecretPattern("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b"),
    SecretPattern("slack_token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    SecretPattern("google_api_key", r"\b(AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)"),
    SecretPattern(PRIVATE_KEY, _PEM_BLOCK),
)
BUILTIN_NAMES = frozenset(p.name for p in BUILTIN_PATTERNS)


def parse_pattern_specs(spec: str) -> list[SecretPattern]:
    """Extra patterns from config: `name=regex;name2=regex2`, or JSON when a regex holds `;`.

    JSON is either `{"name": "regex"}` or `[{"name": ..., "regex": ...}]`.
    """
    spec = spec.strip()
    if not spec:
        return []
    if spec[0] in "[{":
        data = json.loads(spec)
        pairs: Iterable[Sequence[str]] = (
            data.items() if isinstance(data, dict) else ((item["name"], item["regex"]) for item in data)
        )
    else:
        pairs = (part.split("=", 1) for part in spec.split(";") if part.strip())
    patterns = []
    for pair in pairs:
        if len(pair) != 2:
            raise ValueError(f"secret pattern spec {'='.join(pair)!r} is not name=regex")
        patterns.append(SecretPattern(pair[0].strip(), pair[1].strip()))
    return patterns


# ---------------------------------------------------------------- judging one match

_FAKE_MARKERS = re.compile(
    r"\.\.\.|…|xxxx|XXXX|(.)\1{5}|[<>]|example|EXAMPLE|Example|placeholder|PLACEHOLDER|Placeholder"
    r"|redacted|REDACTED|Redacted|changeme|CHANGEME|dummy|DUMMY|Dummy|your[_-]|YOUR[_-]"
)
_KNOWN_PREFIX = re.compile(
    r"^(?:sk-ant-[a-z]+\d*-|sk-(?:proj|svcacct|admin|None)-|sk-|gh[pousr]_|github_pat_|hf_|xox[a-z]-|AKIA|ASIA|AIza)"
)
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _has_fake_marker(text: str) -> bool:
    """Tells a random credential body virtually never has: `...`, `xxxx`, EXAMPLE, 123456, AAAAAA."""
    if _FAKE_MARKERS.search(text):
        return True
    run = 1
    for previous, current in zip(text, text[1:]):
        run = run + 1 if ord(current) == ord(previous) + 1 else 1
        if run >= 6:
            return True
    return False


def _low_entropy(body: str) -> bool:
    """Far fewer distinct characters than a random body of this length would use."""
    if len(body) < 8:
        return False
    counts = Counter(body)
    bits = -sum(n / len(body) * math.log2(n / len(body)) for n in counts.values())
    return bits < 0.5 * math.log2(min(len(body), 64))


def _looks_fake(secret: str) -> bool:
    body = _KNOWN_PREFIX.sub("", secret)
    return _has_fake_marker(body) or _low_entropy(body)


def _json_segment(segment: str) -> Any:
    try:
        return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (ValueError, binascii.Error, RecursionError):
        return None


def _jwt_payload_is_fake(token: str) -> bool:
    """jwt.io's sample and friends: the claims themselves say example ("sub": "1234567890")."""
    payload = _json_segment(token.split(".")[1])
    values = payload.values() if isinstance(payload, dict) else ()
    return any(isinstance(value, str) and _has_fake_marker(value) for value in values)


def _is_signed_jwt(token: str) -> bool:
    """Header and payload decode to JSON objects, the header names a real algorithm, a signature follows."""
    header, payload, signature = token.split(".")[:3]
    header_json, payload_json = _json_segment(header), _json_segment(payload)
    return (
        isinstance(header_json, dict)
        and isinstance(header_json.get("alg"), str)
        and header_json["alg"].lower() != "none"
        and isinstance(payload_json, dict)
        and len(signature) >= 16
    )


def _is_github_token(token: str) -> bool:
    """Classic tokens end in base62(crc32(random part)); fine-grained PATs have a fixed layout."""
    if token.startswith("github_pat_"):
        return re.fullmatch(r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}", token) is not None
    if len(token) != 40:
        return False
    random_part, checksum = token[4:34], token[34:]
    value, digits = zlib.crc32(random_part.encode()), ""
    while value:
        value, digit = divmod(value, 62)
        digits = _BASE62[digit] + digits
    return digits.rjust(6, "0") == checksum


def _has_mixed_charset(secret: str) -> bool:
    """A random 40-char AWS secret all but always mixes upper, lower and digits; a git sha does not."""
    return all(re.search(charset, secret) for charset in ("[A-Z]", "[a-z]", "[0-9]"))


# The exact format of each built-in kind; a well-shaped, non-fake match is `live`.
# Extra patterns are the user's own exact format, so a non-fake match of theirs is `live` too.
_EXACT_SHAPE: dict[str, Callable[[str], object]] = {
    "jwt": _is_signed_jwt,
    "aws_access_key_id": re.compile(r"(?:AKIA|ASIA)[A-Z2-7]{16}").fullmatch,  # base32, like AWS mints them
    "aws_secret_access_key": _has_mixed_charset,
    "openai_api_key": lambda key: "T3BlbkFJ" in key,  # base64 of "OpenAI", inside every key OpenAI issues
    "anthropic_api_key": re.compile(r"sk-ant-[a-z]+\d{2}-[A-Za-z0-9_-]{93}AA").fullmatch,
    "hf_token": re.compile(r"hf_[A-Za-z]{34}").fullmatch,
    "github_token": _is_github_token,
    "slack_token": re.compile(r"xox[abprs]-\d{6,}(?:-\d{6,}){1,2}-[A-Za-z0-9]{24,32}").fullmatch,
    "google_api_key": re.compile(r"AIza[0-9A-Za-z_-]{35}").fullmatch,
}


def _token_verdict(kind: str, secret: str) -> str:
    if _looks_fake(secret) or (kind == "jwt" and _jwt_payload_is_fake(secret)):
        return PLACEHOLDER
    exact_shape = _EXACT_SHAPE.get(kind)
    return LIVE if exact_shape is None or exact_shape(secret) else UNVERIFIED


# ---------------------------------------------------------------- PEM blocks

_PEM_HEAD = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----")
# DER lengths of the smallest key of each type that OpenSSL / ssh-keygen commonly write (RSA-1024,
# P-256, DSA-1024, Ed25519), rounded down. A complete block shorter than this is not a real key.
PEM_MIN_DECODED_BYTES = {
    "RSA": 600,
    "EC": 100,
    "DSA": 440,
    "OPENSSH": 230,
    "ENCRYPTED": 90,
    "PKCS8": 48,
    "PKCS8-RSA": 630,
    "PKCS8-EC": 110,
    "PKCS8-DSA": 330,
}
_PKCS8_ALGORITHM_OIDS = {
    "PKCS8-RSA": bytes.fromhex("06092a864886f70d010101"),
    "PKCS8-EC": bytes.fromhex("06072a8648ce3d0201"),
    "PKCS8-DSA": bytes.fromhex("06072a8648ce380401"),
}
# Fewer decoded bytes than this hold no key material at all (a bare marker, a stub line).
_NO_KEY_MATERIAL_BYTES = 16
# Explicit placeholders only: over ~1,600 random base64 characters the token tells (a 4-letter
# word, `xxxx`, six equal characters) turn up by chance, and DER itself has runs of `A`.
_PEM_PLACEHOLDER = re.compile(
    r"\.\.\.|…|[<>]|example|EXAMPLE|Example|placeholder|PLACEHOLDER|Placeholder|redacted|REDACTED|Redacted"
    r"|x{8}|X{8}|(.)\1{15}"
)


@dataclass(frozen=True)
class PemAnalysis:
    """What a PEM block holds, in counts and flags; it carries no key material."""

    kind: str
    truncated: bool
    parseable: bool
    encrypted: bool
    placeholder: bool
    decoded_bytes: int
    min_bytes: int
    verdict: str


def _pem_kind(label: str, der_head: bytes) -> str:
    if label in PEM_MIN_DECODED_BYTES:
        return label
    for kind, oid in _PKCS8_ALGORITHM_OIDS.items():
        if oid in der_head[:32]:
            return kind
    return "PKCS8" if not label else label


def _load_private_key(label: str, header_lines: list[str], b64: str) -> tuple[bool, bool]:
    """(loads, encrypted), trying the PEM loader and then the OpenSSH one on a re-wrapped block.

    `encrypted` means a loader recognised a key it cannot open: password-protected, or of an
    algorithm (or KDF) this build of cryptography does not support.
    """
    headers = "".join(f"{line}\n" for line in header_lines) + ("\n" if header_lines else "")
    body = "\n".join(textwrap.wrap(b64 + "=" * (-len(b64) % 4), 64))
    pem = f"-----BEGIN {label}PRIVATE KEY-----\n{headers}{body}\n-----END {label}PRIVATE KEY-----\n".encode()
    for load in (serialization.load_pem_private_key, serialization.load_ssh_private_key):
        try:
            load(pem, password=None)
            return True, False
        except (TypeError, UnsupportedAlgorithm):
            return False, True
        except Exception:  # malformed input may raise anything; it is then simply not this format
            continue
    return False, False


def analyse_pem_block(block: str) -> PemAnalysis:
    """Decode a matched block: its type, whether it loads as a key, `...` placeholders, its size.

    Verdict: a block that loads is `live` (a password-protected one only if it is also as long as
    a real key of its type). `placeholder` when it holds a placeholder (`...`, `<your key>`), holds
    no key material (under 16 bytes), or is complete yet shorter than a real key of its type.
    Anything else - truncated, or full-length but unloadable - is `unverified`: it may still be
    part of a real key, so it is redacted.
    """
    text = block.replace("\\r", "").replace("\\n", "\n")  # JSON-escaped newlines
    head = _PEM_HEAD.match(text)
    label, start = (head.group(1), head.end()) if head else ("", 0)
    end = text.find("-----END ", start)
    truncated = end < 0
    lines = [line.strip() for line in text[start : None if truncated else end].splitlines()]
    header_lines = [line for line in lines if ": " in line]
    data = "".join(line for line in lines if ": " not in line)
    b64 = re.sub(r"[^A-Za-z0-9+/]", "", data)
    decoded_bytes = len(b64) * 3 // 4
    der_head = base64.b64decode(b64[: min(44, len(b64) // 4 * 4)])
    kind = _pem_kind(label.strip(), der_head)
    min_bytes = PEM_MIN_DECODED_BYTES.get(kind, PEM_MIN_DECODED_BYTES["PKCS8"])
    placeholder = _PEM_PLACEHOLDER.search(data) is not None
    loads, encrypted = (False, False) if truncated else _load_private_key(label, header_lines, b64)
    parseable = loads or (encrypted and decoded_bytes >= min_bytes)
    if parseable:
        verdict = LIVE
    elif placeholder or decoded_bytes < _NO_KEY_MATERIAL_BYTES or (not truncated and decoded_bytes < min_bytes):
        verdict = PLACEHOLDER
    else:
        verdict = UNVERIFIED
    return PemAnalysis(kind, truncated, parseable, encrypted, placeholder, decoded_bytes, min_bytes, verdict)


# ---------------------------------------------------------------- finding matches in rows


def _has_conversations(rows: pl.DataFrame) -> bool:
    return isinstance(rows.schema.get("conversations"), pl.List)


def _texts(rows: pl.DataFrame, first_row_id: int) -> pl.LazyFrame:
    """One row per text to scan (each message content, instruction, verifier output), with its origin."""
    origin = [
        (pl.col(name) if name in rows.columns else pl.lit(None)).cast(pl.String).alias(name) for name in _ROW_ORIGIN[1:]
    ]
    row_id = pl.int_range(first_row_id, first_row_id + pl.len(), dtype=pl.UInt64).alias("row_id")
    base = rows.lazy().with_columns(row_id, *origin)
    parts = [
        base.select(*_ROW_ORIGIN, pl.lit(name).alias("column"), pl.col(name).cast(pl.String).alias("text"))
        for name in _PLAIN_TEXT_COLUMNS
        if name in rows.columns
    ]
    if _has_conversations(rows):
        parts.insert(
            0,
            base.select(*_ROW_ORIGIN, "conversations")
            .explode("conversations")
            .select(
                *_ROW_ORIGIN,
                pl.lit("conversations").alias("column"),
                pl.col("conversations").struct.field("content").alias("text"),
            ),
        )
    if not parts:
        schema = {"row_id": pl.UInt64, **dict.fromkeys(_TEXT_ORIGIN[1:], pl.String), "text": pl.String}
        return pl.LazyFrame(schema=schema)
    return pl.concat(parts).filter(pl.col("text").is_not_null())


def text_bytes(rows: pl.DataFrame) -> int:
    """UTF-8 bytes of every text the scanner reads."""
    return int(_texts(rows, 0).select(pl.col("text").str.len_bytes().sum()).collect().item() or 0)


def _find_matches(
    rows: pl.DataFrame, patterns: Sequence[SecretPattern], first_row_id: int
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(matches: origin + kind + match, pem_marker_rows: row_id + task + markers) for one batch."""
    list_columns = [f"{_MATCH_PREFIX}{p.name}" for p in patterns]
    found = (
        _texts(rows, first_row_id)
        .with_columns(
            pl.col("text").str.count_matches(_PEM_MARKER).alias("pem_markers"),
            *[pl.col("text").str.extract_all(p.regex).alias(column) for p, column in zip(patterns, list_columns)],
        )
        .filter((pl.col("pem_markers") > 0) | pl.any_horizontal(pl.col(c).list.len() > 0 for c in list_columns))
        .drop("text")
        .collect()
    )
    markers = found.filter(pl.col("pem_markers") > 0).select("row_id", "task", "pem_markers")
    matches = (
        found.unpivot(index=list(_TEXT_ORIGIN), on=list_columns, variable_name="kind", value_name="match")
        .explode("match")
        .drop_nulls("match")
        .with_columns(pl.col("kind").str.strip_prefix(_MATCH_PREFIX))
    )
    secret = pl.col("match")
    for pattern in patterns:
        if pattern.has_secret_group:
            secret = (
                pl.when(pl.col("kind") == pattern.name)
                .then(pl.coalesce(pl.col("match").str.extract(pattern.regex, 1), pl.col("match")))
                .otherwise(secret)
            )
    return matches.with_columns(secret.alias("match")), markers


@dataclass(frozen=True)
class _Judgement:
    verdict: str
    fingerprint: str
    preview: str
    pem: PemAnalysis | None


def _preview(secret: str) -> str:
    """At most six leading characters, and never more than a quarter of the secret."""
    return secret[: min(6, len(secret) // 4)] + "…"


class _Judge:
    """Verdicts per distinct match, cached by (kind, sha256) so the cache holds no secrets."""

    def __init__(self, allowlist: Iterable[str]) -> None:
        self.allowlist = tuple(sorted({entry.strip().lower() for entry in allowlist if entry.strip()}))
        for entry in self.allowlist:
            if not re.fullmatch(rf"[0-9a-f]{{{FINGERPRINT_CHARS},64}}", entry):
                raise ValueError(f"allowlist entry {entry!r} is not a sha256 hex fingerprint (16-64 hex chars)")
        self._cache: dict[tuple[str, str], _Judgement] = {}

    def judge(self, kind: str, secret: str) -> _Judgement:
        digest = hashlib.sha256(secret.encode()).hexdigest()
        key = (kind, digest)
        if key not in self._cache:
            pem = analyse_pem_block(secret) if kind == PRIVATE_KEY else None
            if digest.startswith(self.allowlist):
                verdict = PLACEHOLDER
            else:
                verdict = pem.verdict if pem else _token_verdict(kind, secret)
            self._cache[key] = _Judgement(verdict, digest[:FINGERPRINT_CHARS], _preview(secret), pem)
        return self._cache[key]

    def judged(self, matches: pl.DataFrame) -> tuple[pl.DataFrame, dict[tuple[str, str], _Judgement]]:
        """The matches with verdict, fingerprint and preview columns; judgements by (kind, fingerprint)."""
        distinct = matches.select("kind", "match").unique()
        judgements = [self.judge(kind, secret) for kind, secret in distinct.iter_rows()]
        table = distinct.with_columns(
            pl.Series("verdict", [j.verdict for j in judgements], pl.String),
            pl.Series("fingerprint", [j.fingerprint for j in judgements], pl.String),
            pl.Series("preview", [j.preview for j in judgements], pl.String),
        )
        by_fingerprint = {(kind, j.fingerprint): j for kind, j in zip(distinct["kind"], judgements)}
        return matches.join(table, on=["kind", "match"]), by_fingerprint


def _all_patterns(extra_patterns: Sequence[SecretPattern]) -> tuple[SecretPattern, ...]:
    names = [p.name for p in extra_patterns]
    clashes = sorted(set(names) & BUILTIN_NAMES) + sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise ValueError(f"secret pattern names must be unique and not built-in: {', '.join(clashes)}")
    return (*BUILTIN_PATTERNS, *extra_patterns)


# ---------------------------------------------------------------- scanning and redaction


class SecretScanner:
    """Accumulates findings over batches of rows; only counts, sets of names and capped lists are kept."""

    def __init__(
        self, run_id: str, extra_patterns: Sequence[SecretPattern] = (), allowlist: Iterable[str] = ()
    ) -> None:
        self.run_id = run_id
        self.patterns = _all_patterns(extra_patterns)
        self._judge = _Judge(allowlist)
        self._rows_scanned = 0
        self._bytes_scanned = 0
        self._kinds = {p.name: {"matches": 0, "rows": 0, **dict.fromkeys(VERDICTS, 0)} for p in self.patterns}
        self._trials: dict[str, set[str]] = {p.name: set() for p in self.patterns}
        self._tasks: dict[str, set[str]] = {p.name: set() for p in self.patterns}
        pem_counts = ("markers", "rows", "blocks", "truncated", "parseable", "placeholder", "max_decoded_bytes")
        self._pem = dict.fromkeys(pem_counts, 0)
        self._pem_tasks: set[str] = set()
        self._pem_blocks: dict[tuple[str | None, str], dict[str, Any]] = {}
        self._pem_blocks_omitted = 0
        self._findings: dict[tuple, dict[str, Any]] = {}
        self._findings_omitted = 0

    def scan(self, rows: pl.DataFrame) -> None:
        """Add one batch of rows to the tallies."""
        matches, markers = _find_matches(rows, self.patterns, self._rows_scanned)
        self._rows_scanned += rows.height
        self._bytes_scanned += text_bytes(rows)
        self._pem["markers"] += int(markers["pem_markers"].sum() or 0)
        self._pem["rows"] += markers["row_id"].n_unique()
        self._pem_tasks.update(markers["task"].drop_nulls().unique().to_list())
        if matches.is_empty():
            return
        matches, judgements = self._judge.judged(matches)
        self._tally_kinds(matches)
        self._tally_pem(matches.filter(pl.col("kind") == PRIVATE_KEY), judgements)
        self._tally_findings(matches)

    def _tally_kinds(self, matches: pl.DataFrame) -> None:
        per_kind = matches.group_by("kind").agg(
            pl.len().alias("matches"),
            pl.col("row_id").n_unique().alias("rows"),
            *[(pl.col("verdict") == v).sum().alias(v) for v in VERDICTS],
            pl.col("trial_name").drop_nulls().unique().alias("trial_names"),
            pl.col("task").drop_nulls().unique().alias("task_names"),
        )
        for row in per_kind.iter_rows(named=True):
            counts = self._kinds[row["kind"]]
            for field in ("matches", "rows", *VERDICTS):
                counts[field] += row[field]
            self._trials[row["kind"]].update(row["trial_names"])
            self._tasks[row["kind"]].update(row["task_names"])

    def _tally_pem(self, blocks: pl.DataFrame, judgements: dict[tuple[str, str], _Judgement]) -> None:
        """Block counts per occurrence; the listed blocks are one per (trial, distinct block)."""
        for trial_name, fingerprint, occurrences in (
            blocks.group_by("trial_name", "fingerprint", maintain_order=True).len().iter_rows()
        ):
            judgement = judgements[(PRIVATE_KEY, fingerprint)]
            pem = judgement.pem
            assert pem is not None, "private_key matches are always analysed as PEM"
            self._pem["blocks"] += occurrences
            self._pem["truncated"] += occurrences * pem.truncated
            self._pem["parseable"] += occurrences * pem.parseable
            self._pem["placeholder"] += occurrences * pem.placeholder
            self._pem["max_decoded_bytes"] = max(self._pem["max_decoded_bytes"], pem.decoded_bytes)
            listed = self._pem_blocks.get((trial_name, fingerprint))
            if listed is not None:
                listed["occurrences"] += occurrences
            elif len(self._pem_blocks) < FINDINGS_CAP:
                self._pem_blocks[(trial_name, fingerprint)] = {
                    "trial_name": trial_name,
                    "kind": pem.kind,
                    "truncated": pem.truncated,
                    "parseable": pem.parseable,
                    "encrypted": pem.encrypted,
                    "placeholder": pem.placeholder,
                    "decoded_bytes": pem.decoded_bytes,
                    "min_bytes": pem.min_bytes,
                    "verdict": judgement.verdict,
                    "fingerprint": fingerprint,
                    "occurrences": occurrences,
                }
            else:
                self._pem_blocks_omitted += occurrences

    def _tally_findings(self, matches: pl.DataFrame) -> None:
        """One finding per (kind, secret, trial, trace source, column), with its occurrence count."""
        keys = ("kind", "fingerprint", "trial_name", "task", "trace_source", "column", "verdict", "preview")
        for *key, occurrences in matches.group_by(keys, maintain_order=True).len().iter_rows():
            finding = self._findings.get(tuple(key))
            if finding is not None:
                finding["occurrences"] += occurrences
            elif len(self._findings) < FINDINGS_CAP:
                self._findings[tuple(key)] = {**dict(zip(keys, key)), "occurrences": occurrences}
            else:
                self._findings_omitted += occurrences

    def report(self) -> dict[str, Any]:
        """JSON-ready summary of everything scanned so far; it holds no secret text."""
        kinds = {
            kind: {
                "matches": counts["matches"],
                "rows": counts["rows"],
                "trials": len(self._trials[kind]),
                "tasks": len(self._tasks[kind]),
                **{v: counts[v] for v in VERDICTS},
            }
            for kind, counts in self._kinds.items()
        }
        return {
            "run_id": self.run_id,
            "verdict": overall_verdict(kinds),
            "unverified": sum(counts[UNVERIFIED] for counts in kinds.values()),
            "rows_scanned": self._rows_scanned,
            "bytes_scanned": self._bytes_scanned,
            "kinds": kinds,
            "pem": {**self._pem, "tasks": len(self._pem_tasks)},
            "pem_blocks": sorted(self._pem_blocks.values(), key=_listing_order),
            "pem_blocks_omitted": self._pem_blocks_omitted,
            "findings": sorted(self._findings.values(), key=_listing_order),
            "findings_omitted": self._findings_omitted,
            "redacted": {},
        }


def _listing_order(entry: dict[str, Any]) -> tuple[str, ...]:
    """Listed entries sort the same however the rows were batched."""
    return tuple(str(entry.get(key) or "") for key in ("kind", "trial_name", "trace_source", "column", "fingerprint"))


def overall_verdict(kinds: dict[str, dict[str, int]]) -> str:
    """`live` if anything is verifiably live, `placeholders_only` if matches exist but none is, else `clean`.

    Matches that may be real but could not be verified are counted in the report's `unverified`
    (and redacted in redact mode); they do not make a run `live`, so they do not block it.
    """
    if any(counts[LIVE] for counts in kinds.values()):
        return "live"
    if any(counts["matches"] for counts in kinds.values()):
        return "placeholders_only"
    return "clean"


def redact(
    rows: pl.DataFrame, extra_patterns: Sequence[SecretPattern] = (), allowlist: Iterable[str] = ()
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Replace every live or unverified match with `[REDACTED:<kind>]`; placeholders stay as they are.

    Returns the rows with the same schema, and the matches replaced per kind. Every occurrence of
    such a secret's text is replaced, including any the pattern's word boundaries did not match.
    """
    matches, _ = _find_matches(rows, _all_patterns(extra_patterns), 0)
    if matches.is_empty():
        return rows, {}
    matches, _ = _Judge(allowlist).judged(matches)
    hidden = matches.filter(pl.col("verdict").is_in(REDACTED_VERDICTS))
    if hidden.is_empty():
        return rows, {}
    counts = dict(hidden.group_by("kind", maintain_order=True).len().iter_rows())
    # Longest first, so a secret that contains another is replaced whole.
    secrets = hidden.unique("match", keep="first").sort(pl.col("match").str.len_bytes(), descending=True)
    targets = secrets["match"].to_list()
    replacements = [f"[REDACTED:{kind}]" for kind in secrets["kind"]]

    def scrub(text: pl.Expr) -> pl.Expr:
        return text.str.replace_many(targets, replacements, leftmost=True)

    columns = [scrub(pl.col(name)) for name in _PLAIN_TEXT_COLUMNS if rows.schema.get(name) == pl.String]
    if _has_conversations(rows):
        columns.append(pl.col("conversations").list.eval(pl.element().struct.with_fields(scrub(pl.field("content")))))
    return rows.with_columns(columns), counts
