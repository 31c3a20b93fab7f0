"""The secret kinds: one `SecretKind` record per kind, so adding a kind is one edit here.

A kind has rules (a regex in Rust `regex` syntax, no lookaround, and the literals one of which any
match must contain, for the prefilter), a shape check (its exact format: a match that passes is
`live`) and how it is judged: a token of a known format, a generic keyword-context value (never
`live`), or a private-key block (decoded).

When a rule's regex has a capturing group, group 1 is the secret and the rest is context that must
be present but is neither fingerprinted nor redacted. A rule's `\\w`, `\\d`, `\\s` and `\\b` are run as
their ASCII forms (`ascii_classes`): a token holds no other letters.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property, partial
from typing import Any

import polars as pl

from trace_assets.secret_scan import assignments, judge
from trace_assets.secret_scan.pem import PEM_BLOCK, PGP_BLOCK
from trace_assets.secret_scan.vendor_rules import VENDOR_RULES


class Judged(StrEnum):
    """How a kind's matches are judged."""

    TOKEN = "token"  # a known format: fake tells -> placeholder, shape -> live, else unverified
    GENERIC = "generic"  # a keyword-context value: random-looking -> unverified, else placeholder
    KEY_BLOCK = "key_block"  # a PEM or PGP block: decoded, see `pem.analyse_pem_block`


@dataclass(frozen=True)
class Rule:
    """One regex of a kind; the prefilter runs it only on texts holding one of `literals` (any case).

    Literals are written as the secret spells them: their base64 and URL encodings are triggers too.
    """

    regex: str
    literals: tuple[str, ...]
    # False where only a loose keyword names a bare hex or UUID value (`WANDB_GIT_COMMIT=<sha>`): a commit,
    # release or index id looks the same, so such a match is `unverified` at most (redacted, never blocking).
    may_be_live: bool = True
    # A match whose secret has fewer bits of entropy per character is no match (the vendor rules' own bound).
    min_entropy: float = 0.0
    # Given (text, match start, match, secret): the secret as found (maybe shortened), or None for no
    # match; what the regex cannot see (the name before its credential word) is judged here.
    refine: Callable[[str, int, str, str], str | None] | None = field(default=None, compare=False)

    @cached_property
    def has_secret_group(self) -> bool:
        return has_capturing_group(self.regex)

    @cached_property
    def search_regex(self) -> str:
        """The regex as the finder runs it: its classes ASCII (`ascii_classes`)."""
        return ascii_classes(self.regex)


def _regex_pieces(regex: str) -> Iterator[tuple[int, str, int]]:
    """(start, piece, depth) for each piece of a (valid) regex: an escape, a class's opening (with its
    `^` and a `]` first in it, which is itself), or one character; depth counts the character
    classes the piece stands in (`[a-z&&[^x]]` nests them)."""
    index, depth = 0, 0
    while index < len(regex):
        char = regex[index]
        end = index + (2 if char == "\\" else 1)
        if char == "[":
            if regex.startswith("^", end):
                end += 1
            if depth == 0 and regex.startswith("]", end):
                end += 1
        yield index, regex[index:end], depth
        if char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
        index = end


def has_capturing_group(regex: str) -> bool:
    """Whether a (valid) regex holds a capturing group: a `(` outside a class and an escape, not `(?`
    or a named `(?P<`/`(?<` one. Read off the text: asking polars costs ms a rule, hundreds at start."""
    return any(
        piece == "("
        and not depth
        and (not regex.startswith("?", start + 1) or regex.startswith(("?P<", "?<"), start + 1))
        for start, piece, depth in _regex_pieces(regex)
    )


# A space as `\x20`: verbose mode (`(?x)`, most vendor rules) ignores whitespace in classes too.
_ASCII_CLASSES = {"w": "0-9A-Za-z_", "d": "0-9", "s": "\\t\\n\\x0B\\f\\r\\x20"}


def ascii_classes(regex: str) -> str:
    """`regex` with `\\w`, `\\d`, `\\s` and `\\b` ASCII-only: a token is ASCII, and Unicode classes
    are slow to compile (the Square rule's `[\\w-]{22,60}` 34 ms, 1 ms ASCII) and a Unicode `\\b`
    sends the lazy DFA back to a slower engine at the first non-ASCII byte."""
    out = []
    for _, piece, depth in _regex_pieces(regex):
        escape = piece[1:] if piece.startswith("\\") else ""
        if escape in _ASCII_CLASSES:
            out.append(_ASCII_CLASSES[escape] if depth else f"[{_ASCII_CLASSES[escape]}]")
        elif escape == "b" and not depth:
            out.append("(?-u:\\b)")
        else:
            out.append(piece)
    return "".join(out)


@dataclass(frozen=True)
class SecretKind:
    name: str
    rules: tuple[Rule, ...]
    shape: Callable[[str], object] | None = field(default=None, compare=False)
    judged: Judged = Judged.TOKEN
    # False for the vendor rules (`vendor_token`): broad, so a kind of our own wins where both match,
    # and a line break is not joined for them (the join is for our own exact formats).
    specific: bool = True
    # A looser format than `shape` (gitleaks' rule for the vendor): a match that fails `shape` but has
    # this one is `unverified` with no credential word before it, not a near miss.
    rough_shape: Callable[[str], object] | None = field(default=None, compare=False)
    # A generic kind's test of a value that makes it `unverified` (else a placeholder).
    value_test: Callable[[str], bool] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"secret pattern name {self.name!r} must be lower_snake_case")
        if not self.specific:  # generated and checked by benchmarks/secret_vendor_rules.py and a test
            return
        try:  # all rules in one call
            checks = (pl.lit("").str.contains(rule.search_regex).alias(str(i)) for i, rule in enumerate(self.rules))
            matches_empty = any(pl.select(*checks).row(0))
        except pl.exceptions.ComputeError:
            matches_empty = False
            for rule in self.rules:  # name the one that is no regex
                try:
                    pl.select(pl.lit("").str.contains(rule.search_regex))
                except pl.exceptions.ComputeError as error:
                    raise ValueError(
                        f"secret pattern {self.name!r}: {rule.regex!r} is not a valid regex (Rust regex syntax): "
                        f"{_regex_error(error)}"
                    ) from None
        if matches_empty:
            raise ValueError(f"secret pattern {self.name!r} matches the empty string")

    @property
    def rank(self) -> int:
        """Where matches of two kinds overlap, the higher rank is kept: key blocks, our tokens, the vendor
        rules, then generic values."""
        return {Judged.KEY_BLOCK: 4, Judged.TOKEN: 3 if self.specific else 2, Judged.GENERIC: 1}[self.judged]


def _regex_error(error: Exception) -> str:
    """The regex crate's reason (`unclosed group`), from polars' several-line message."""
    lines = str(error).splitlines()
    return next((line.removeprefix("error: ") for line in lines if line.startswith("error: ")), lines[0])


def _token(name: str, regex: str, literals: Iterable[str], shape: Callable[[str], object] | None) -> SecretKind:
    return SecretKind(name, (Rule(regex, tuple(literals)),), shape)


def _fullmatch(regex: str) -> Callable[[str], object]:
    return re.compile(regex).fullmatch


_TOKEN_THEN_S_DOT = tuple(
    f"token{sep}{quote}s." for sep in (":", ": ", "=", " = ", '":', '": ') for quote in ("", '"', "'")
)
_CLOUDFLARE_GLOBAL_KEY = re.compile(r"[a-f0-9]{37}")  # lowercase hex: a mixed-case check could never pass
_VAULT_TOKEN = re.compile(r"hv[sbr]\.[A-Za-z0-9_-]{90,}|hvs\.[A-Za-z0-9_-]{24}")


# Context before a value is bounded (no `*` or `+`): the raw scan's chunks start MARGIN_CHARS
# before their counted part, so a match whose value starts there is found with its whole context.
# Whitespace between a keyword and its value: up to 128 characters (gitleaks allows 3 to 5), so
# columns aligned in a printed table or config (`aws configure list`, `env | column -t`) still match.
_GAP = r"\s{0,128}"
_HGAP = r"[ \t]{0,128}"  # between an assigned name and its value: never a line break
_SPACES = r"\s{1,128}"
# A keyword, then up to 30 name characters (`WANDB_API_KEY`, `cohere.api_key`), then an assignment.
_ASSIGN = rf"[A-Za-z0-9_.-]{{0,30}}[\"']?{_HGAP}(?:=>|:=|[:=]){_HGAP}[\"'`]?"
# A vendor's name may also be followed by one more word (`vercel token = ...`): its value's shape is specific.
_VENDOR_ASSIGN = rf"[A-Za-z0-9_.-]{{0,30}}(?: [A-Za-z_]{{1,20}})?[\"']?{_HGAP}(?:=>|:=|[:=]){_HGAP}[\"'`]?"
# The exact credential variable (`WANDB_API_KEY=`, `"HEROKU_API_KEY":`): nothing between it and the assignment.
_EXACT_ASSIGN = rf"[\"']?{_HGAP}(?:=>|:=|[:=]){_HGAP}[\"'`]?"
_END = r"(?:[^A-Za-z0-9_+/=.~-]|$)"
# A curl command line up to one of its options (bounded: at most 400 characters before it).
_CURL = r"\bcurl\b[^\n]{0,400}?[ \t]"


def _keyword(keywords: Sequence[str], value: str, assign: str = _VENDOR_ASSIGN, may_be_live: bool = True) -> Rule:
    """`<keyword...> = <value>`, in env, YAML, JSON, TOML or code; group 1 is the value."""
    alternatives = "|".join(re.escape(k) for k in keywords)
    return Rule(rf"(?i:{alternatives}){assign}({value}){_END}", tuple(keywords), may_be_live)


def _bare_value(variables: Sequence[str], keywords: Sequence[str], value: str) -> tuple[Rule, Rule]:
    """A bare hex or UUID value: `live` only beside the exact credential variable; beside a looser
    name (`WANDB_GIT_COMMIT`) it is `unverified` at most, and a vendor's name followed by another
    word (`wandb commit:`, `Heroku release:`) is no match at all."""
    return _keyword(variables, value, _EXACT_ASSIGN), _keyword(keywords, value, _ASSIGN, may_be_live=False)


def custom_kind(name: str, regex: str) -> SecretKind:
    """A user's own exact format: no literals (it runs on every text), and any non-fake match is live."""
    return _token(name, regex, (), None)


_HEX32 = "[a-f0-9]{32}"
_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_UUID_ANY_CASE = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# An assigned value: quoted or bare, up to a space, a quote, a backslash (an escaped quote or line
# break), a separator or a bracket: never across a line break or a closing quote. Unbounded: a bound
# (`{8,200}`) tripled the time to compile each rule holding it, which polars does at every batch.
_VALUE_CHAR = r"[^\s\"'`\\;,<>(){}\[\]]"
_VALUE = rf"{_VALUE_CHAR}{{8,}}"
# The credential words' literals for the prefilter. A long word stands alone, but `token` and
# `private` only with what may follow them in a name before its value (the literals are matched in
# any case, so a camelCase name's next letter is any letter): alone they let through every
# text about tokens (a third of a generated run's: `tokens = loader.split(`) or every class of
# Java. A short word inside a name (`INTERNAL_SERVICE_KEY`, `signingKey: `) is not at a word start,
# so its separators are literals too (of five characters or more where a literal of four or fewer
# must start a word). One set for the three kinds: the strongest word of a name claims it
# (`acmeSecretKey:` is a secret's, found from `Key: `), so each runs wherever any of them may.
_ASSIGNED = ("=", ":", '"', "'", " =", " :", "\\", "  ", "_", "-")
_SHORT_ASSIGNED = ("=", ": ", '":', " =", '="', "='", '\\"', "  ")
_ASSIGNMENT_LITERALS = (
    *("secret", "passw", "passphrase", "credential", "creds", "apikey"),
    *(word + end for word in ("token", "private") for end in _ASSIGNED),
    # camelCase (`githubTokenReadonly`), but not `tokens` nor `tokenizer`
    *(f"token{letter}" for letter in "abcdefghjklmnopqrtuvwxyz"),
    *(word + end for word in ("key", "auth", "pass", "pwd") for end in _SHORT_ASSIGNED),
    *(separator + word for word in ("key", "auth", "pass", "pwd") for separator in "_-."),
)
# A flag's name ends in its credential word (`--api-token`, `--db-password=`): `--` alone starts a
# third of a trace's texts.
_FLAG_LITERALS = tuple(
    f"-{word}" for word in ("token", "key", "secret", "passw", "pass", "pwd", "auth", "cred", "apikey")
)


# An assigned value: not another `:` or `=` first (`tokens.py::test_x`, `a == b`), and not a call
# (`tokens = loader.split(`): code names far more than it assigns credentials. A password may be
# 8 characters, any other credential 12 (`assignments.MIN_GENERATED`).
_CODE_END = r"(?:[^A-Za-z0-9_+/=.~(-]|$)"


def _assigned_value(min_length: int) -> str:
    return rf"[^\s\"'`\\;,<>(){{}}\[\]:=]{_VALUE_CHAR}{{{min_length - 1},}}"


def _case_forms(words: Sequence[str]) -> str:
    """`token|Token|TOKEN|...`: the ways names spell a word, as literals the regex engine searches
    for fast; `(?i:...)` of long words is thousands of case variants, which it scans for slowly."""
    return "|".join(re.escape(form) for word in words for form in (word, word.capitalize(), word.upper()))


def _assignment(word: assignments.CredentialWord) -> Rule:
    """`NAME = value` in env, shell, YAML, JSON (escaped too), TOML, INI, Python (`os.environ["NAME"] =`,
    `api_key="..."`), headers and URL queries, from a credential word in the name: the name around it
    is judged by `assignments.refine_assignment` (a name holding several credential words is the
    strongest word's: `SECRET_KEY` a secret's), the value by the kind."""
    alternatives = _case_forms(assignments.WORDS[word])
    quote = r"(?:\\{0,3}[\"'])"
    operator = rf"{quote}?\]?{_HGAP}(?:=>|:=|[:=]){_HGAP}(?:\\{{0,3}}[\"'`])?"
    value = _assigned_value(8 if word == "password" else assignments.MIN_GENERATED)
    return Rule(
        rf"(?:{alternatives})[A-Za-z0-9_.-]{{0,40}}{operator}({value}){_CODE_END}",
        _ASSIGNMENT_LITERALS,
        refine=partial(assignments.refine_assignment, word),
    )


PRIVATE_KEY = "private_key"
PGP_PRIVATE_KEY = "pgp_private_key"
KEY_BLOCK_KINDS = frozenset({PRIVATE_KEY, PGP_PRIVATE_KEY})

BUILTIN_KINDS: tuple[SecretKind, ...] = (
    # ---- formats the project has always claimed
    _token("jwt", r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*", [".eyJ"], judge.is_signed_jwt),
    _token(
        "aws_access_key_id",
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
        ["A3T", "AKIA", "ASIA", "ABIA", "ACCA"],
        _fullmatch(r"(?:A3T[A-Z2-7]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}"),  # base32, as AWS mints them
    ),
    SecretKind(
        "aws_secret_access_key",
        (
            Rule(
                r"(?:(?i:aws[a-z_]{0,20}secret[a-z_]{0,20}|secret_?access_?key)[\\\"'\s]{0,128}(?::|=>?)[\\\"'\s]{0,128}"
                r"|\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}[\s,:;|\"'=]{1,8})([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)",
                ("secret", "AKIA", "ASIA", "ABIA", "ACCA"),
            ),
        ),
        judge.has_mixed_charset,
    ),
    _token(
        "openai_api_key",
        r"\bsk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{32,})",
        ["sk-"],
        judge.is_openai_key,
    ),
    _token(
        "anthropic_api_key",
        r"\bsk-ant-[A-Za-z0-9_-]{20,}",
        ["sk-ant-"],
        _fullmatch(r"sk-ant-[a-z]+\d{2}-[A-Za-z0-9_-]{93}AA"),
    ),
    _token(
        "hf_token",
        r"\b(?:hf_|api_org_)[A-Za-z0-9]{34,}\b",
        ["hf_", "api_org_"],
        _fullmatch(r"(?:hf|api_org)_[A-Za-z]{34}"),
    ),
    _token(
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9_]{36,255}|github_pat_[A-Za-z0-9_]{22,})\b",
        ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        judge.is_github_token,
    ),
    SecretKind(
        "slack_token",
        (
            Rule(r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}", ("xoxa-", "xoxb-", "xoxe-", "xoxo-", "xoxp-", "xoxr-", "xoxs-")),
            Rule(r"\bxoxe\.xox[bp]-\d-[A-Za-z0-9]{100,}", ("xoxe.",)),
            Rule(r"\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+", ("xapp-",)),
        ),
        _fullmatch(
            r"xox[abprs]-\d{6,}(?:-\d{6,}){1,2}-[A-Za-z0-9]{24,32}|xoxe\.xox[bp]-\d-[A-Za-z0-9]{140,}"
            r"|xoxe-\d-[A-Za-z0-9]{140,}|xapp-\d-[A-Z0-9]{9,11}-\d{10,13}-[a-f0-9]{64}"
        ),
        # gitleaks' slack rules (MIT): legacy bot, user, legacy and workspace tokens
        rough_shape=_fullmatch(
            r"xoxb-[0-9]{8,14}-[a-zA-Z0-9]{18,26}|xoxb-[0-9]{10,13}-[0-9]{10,13}[a-zA-Z0-9-]*"
            r"|xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}|xox[os]-\d+-\d+-\d+-[a-fA-F\d]+"
            r"|xox[ar]-(?:\d-)?[0-9a-zA-Z]{8,48}"
        ),
    ),
    _token(
        "google_api_key",
        r"\b(AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)",
        ["AIza"],
        _fullmatch(r"AIza[0-9A-Za-z_-]{35}"),
    ),
    SecretKind(PRIVATE_KEY, (Rule(PEM_BLOCK, ("PRIVATE KEY-----",)),), judged=Judged.KEY_BLOCK),
    SecretKind(PGP_PRIVATE_KEY, (Rule(PGP_BLOCK, ("PGP PRIVATE KEY BLOCK",)),), judged=Judged.KEY_BLOCK),
    # ---- LLM and ML providers
    _token("openrouter_api_key", r"\bsk-or-v1-[a-f0-9]{64}\b", ["sk-or-v1-"], lambda key: True),
    _token("groq_api_key", r"\bgsk_[A-Za-z0-9]{52}\b", ["gsk_"], lambda key: True),
    _token("xai_api_key", r"\bxai-[A-Za-z0-9]{80}\b", ["xai-"], lambda key: True),
    SecretKind("deepseek_api_key", (_keyword(["deepseek"], r"sk-[a-f0-9]{32}"),), lambda key: True),
    _token("perplexity_api_key", r"\bpplx-[A-Za-z0-9]{48}\b", ["pplx-"], lambda key: True),
    SecretKind("cohere_api_key", (_keyword(["cohere", "co_api_key"], "[A-Za-z0-9]{40}"),), judge.has_mixed_charset),
    _token("replicate_api_token", r"\br8_[A-Za-z0-9]{37}\b", ["r8_"], lambda key: True),
    _token("langsmith_api_key", r"\blsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}\b", ["lsv2_"], lambda key: True),
    SecretKind(
        "pinecone_api_key",
        (
            Rule(r"\bpcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{50,80}\b", ("pcsk_",)),
            *_bare_value(["pinecone_api_key"], ["pinecone"], _UUID),
        ),
        lambda key: True,
    ),
    SecretKind(
        "azure_openai_api_key",
        (
            _keyword(["azure_openai", "azureopenai", "azure_api_key", "api-key"], "[A-Za-z0-9]{84}"),
            *_bare_value(
                ["azure_openai_api_key", "azure_openai_key", "azure_api_key", "api-key"],
                ["azure_openai", "azureopenai", "azure_api_key", "api-key"],
                _HEX32,
            ),
        ),
        lambda key: True,
    ),
    SecretKind(
        "wandb_api_key",
        (
            *_bare_value(["wandb_api_key", "wandb_key"], ["wandb"], "[a-f0-9]{40}|local-[a-f0-9]{40}"),
            Rule(
                rf"(?i:machine{_SPACES}api\.wandb\.ai{_SPACES}login{_SPACES}\S{{1,128}}{_SPACES}password){_SPACES}"
                r"([a-f0-9]{40})\b",
                ("api.wandb.ai",),
            ),
        ),
        judge.mixes_letters_and_digits,  # lowercase hex: a mixed-case check could never pass
    ),
    # ---- code hosting and package registries
    _token(  # base64 of the macaroon's location: pypi.org, or test.pypi.org
        "pypi_token",
        r"\bpypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,}",
        ["pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"],
        lambda key: len(key) >= 80,
    ),
    SecretKind(
        "npm_token",
        (
            Rule(r"\bnpm_[A-Za-z0-9]{36}\b", ("npm_",)),
            # an .npmrc line: legacy tokens are UUIDs, only the key name says what they are
            Rule(
                rf"//[^\s/]{{1,128}}/:_authToken={_GAP}({_UUID_ANY_CASE}|npm_[A-Za-z0-9]{{36}})\b", ("/:_authToken=",)
            ),
        ),
        lambda key: judge.crc32_base62_ok(key, 4),
    ),
    SecretKind(
        "gitlab_token",
        (
            Rule(
                r"\b(?:gl(?:pat|dt|rt|cbt|ptt|ft|imt|soat|oas)-[A-Za-z0-9_-]{20,}|glagent-[A-Za-z0-9_-]{50,1024}"
                r"|GR1348941[A-Za-z0-9_-]{20,50}\b)",
                ("glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "glft-", "glimt-", "glsoat-", "gloas-", "glagent-")
                + ("GR1348941",),
            ),
        ),
        _fullmatch(r"gl[a-z]+-[A-Za-z0-9_-]{20}(?:\.[A-Za-z0-9]{2}\.[a-z0-9]{9})?|glrt-t\d_[A-Za-z0-9_-]{27}"),
        # gitleaks' per-prefix lengths (MIT): incoming mail, OAuth app secret, agent, trigger, runner registration, job
        rough_shape=_fullmatch(
            r"glimt-[0-9a-zA-Z_-]{25}|gloas-[0-9a-zA-Z_-]{64}|glagent-[0-9a-zA-Z_-]{50}|glptt-[0-9a-f]{40}"
            r"|GR1348941[\w-]{20}|glcbt-[0-9a-zA-Z]{1,5}_[0-9a-zA-Z_-]{20}"
        ),
    ),
    # ---- chat webhooks
    _token(
        "slack_webhook",
        r"\bhooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}",
        ["hooks.slack.com/"],
        _fullmatch(r"hooks\.slack\.com/services/T[A-Z0-9]{8,}/B[A-Z0-9]{8,}/[A-Za-z0-9]{24}|hooks\.slack\.com/\w+/.+"),
    ),
    _token(
        "discord_webhook",
        r"\bdiscord(?:app)?\.com/api/webhooks/\d{17,20}/[A-Za-z0-9_-]{60,72}",
        ["discord.com/api/webhooks/", "discordapp.com/api/webhooks/"],
        lambda key: True,
    ),
    SecretKind(
        "discord_bot_token",
        (
            # a bot token beside its vendor's name, or passed to `client.run(` / `bot.run(` (discord.py)
            Rule(
                r"(?i:discord)(?s:.){0,60}?\b([MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40})\b",
                ("discord",),
            ),
            Rule(
                r"\b(?:client|bot)\.run\(\s{0,8}[\"']([MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40})[\"']",
                ("client.run(", "bot.run("),  # not `.run(` alone: `subprocess.run(` is in most traces
            ),
        ),
        judge.is_discord_bot_token,
    ),
    # ---- payments, messaging, email
    _token(
        "stripe_key",
        r"\b(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,99}\b",
        ["sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"],
        _fullmatch(r"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{24,99}"),
    ),
    SecretKind(
        "twilio_api_key",
        (
            _keyword(["twilio"], "SK[0-9a-fA-F]{32}"),
            *_bare_value(["twilio_api_key", "twilio_auth_token"], ["twilio"], _HEX32),
        ),
        lambda key: True,
    ),
    _token(
        "sendgrid_api_key",
        r"\bSG\.[A-Za-z0-9_-]{20,24}\.[A-Za-z0-9_-]{39,50}\b",  # the exact lengths (22, 43) are the shape
        ["SG."],
        _fullmatch(r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    ),
    SecretKind(
        "mailgun_api_key",
        (
            Rule(r"\bkey-[0-9a-z]{32}\b", ("key-",)),
            # a private key's own shape (32, 8 and 8 hex digits) is specific enough to take its vendor's
            # name anywhere in the 60 characters before it: an XML element, `setProperty("MAILGUN_...", `
            Rule(rf"(?i:mailgun)(?s:.){{0,60}}?\b({_HEX32}-[a-f0-9]{{8}}-[a-f0-9]{{8}})\b", ("mailgun",)),
        ),
        lambda key: True,
    ),
    # ---- cloud and infrastructure
    SecretKind(  # an age identity (SOPS_AGE_KEY, keys.txt): Bech32, so its checksum is its exact format
        "age_secret_key",
        (Rule(r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b", ("AGE-SECRET-KEY-1",)),),
        judge.is_age_secret_key,
        # its charset and length with a checksum that fails (a copy cut and mended, a made-up sample): unverified
        rough_shape=_fullmatch(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ),
    SecretKind(
        "azure_connection_string",
        (
            # Service Bus, Event Hubs, IoT Hub: a 256-bit key after its policy's name
            Rule(r"(?i:SharedAccessKey)=([A-Za-z0-9+/]{43}=)", ("SharedAccessKey=",)),
            # a shared access signature (a storage account's SAS URL or connection string): `sv=<date>...&sig=`
            Rule(r"\bsv=\d{4}-\d{2}-\d{2}&[^\s\"'<>]{0,400}?\bsig=([A-Za-z0-9%+/]{40,100})", ("sig=",)),
        ),
        lambda key: judge.decodes_to_bytes(32)(urllib.parse.unquote(key)),
    ),
    _token(
        "azure_storage_key",
        r"(?i:AccountKey)=([A-Za-z0-9+/]{86}==)",
        ["AccountKey="],
        judge.decodes_to_bytes(64),
    ),
    _token(
        "azure_client_secret",
        r"(?:^|[^A-Za-z0-9_~.-])([A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34})(?:[^A-Za-z0-9_~.-]|$)",
        ["Q~"],
        lambda key: True,
    ),
    SecretKind(
        "vault_token",
        (
            Rule(r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}", ("hvs.", "hvb.", "hvr.")),
            # before Vault 1.10 service tokens were `s.` and 24 characters: only a keyword tells them
            # (`token` alone as a literal would make most trace texts candidates, so it comes with `s.`)
            Rule(_keyword(["vault", "token"], r"s\.[A-Za-z0-9]{24}").regex, ("vault", *_TOKEN_THEN_S_DOT)),
        ),
        # the body of a legacy token: the `s` of `s.` is no sign of a mixed charset
        lambda key: _VAULT_TOKEN.fullmatch(key) or (key.startswith("s.") and judge.has_mixed_charset(key[2:])),
    ),
    _token(
        "databricks_token",
        r"\bdapi[a-f0-9]{32}(?:-\d)?\b",
        ["dapi"],
        _fullmatch(r"dapi[a-f0-9]{32}(?:-\d)?"),
    ),
    _token("digitalocean_token", r"\bdo[por]_v1_[a-f0-9]{64}\b", ["dop_v1_", "doo_v1_", "dor_v1_"], lambda key: True),
    SecretKind(
        "heroku_api_key",
        (
            Rule(r"\bHRKU-[A-Za-z0-9_-]{58,64}\b", ("HRKU-",)),
            *_bare_value(["heroku_api_key"], ["heroku"], _UUID_ANY_CASE),
        ),
        lambda key: True,
    ),
    _token(
        "sentry_token",
        r"\bsntry[su]_[A-Za-z0-9+/=_-]{60,}",
        ["sntrys_", "sntryu_"],
        lambda key: re.fullmatch(r"sntryu_[a-f0-9]{64}", key) or judge.b64_text(key[7:].split("_")[0]) is not None,
    ),
    SecretKind(
        "grafana_token",
        (
            Rule(r"\bglc_[A-Za-z0-9+/]{32,400}={0,2}", ("glc_",)),
            Rule(r"\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b", ("glsa_",)),
            Rule(r"\beyJrIjoi[A-Za-z0-9]{70,400}={0,2}", ("eyJrIjoi",)),
        ),
        lambda key: True,
    ),
    SecretKind(
        "cloudflare_api_token",
        (
            _keyword(["cloudflare", "cf_api_token", "cf_api_key"], "[A-Za-z0-9_-]{40}|[a-f0-9]{37}"),
            Rule(r"\bv1\.0-[a-f0-9]{24}-[a-f0-9]{146}\b", ("v1.0-",)),
        ),
        lambda key: (
            key.startswith("v1.0-")  # origin CA keys
            or (
                judge.mixes_letters_and_digits(key)
                if _CLOUDFLARE_GLOBAL_KEY.fullmatch(key)
                else judge.has_mixed_charset(key)
            )
        ),
    ),
    SecretKind("vercel_token", (_keyword(["vercel"], "[A-Za-z0-9]{24}"),), judge.has_mixed_charset),
    # ---- sandbox providers
    SecretKind(
        "modal_token_secret",
        (
            Rule(
                rf"(?i:token[_-]secret)[\"']?(?:{_GAP}[:=]{_GAP}[\"']?|{_SPACES})(as-[A-Za-z0-9]{{22}})\b",
                ("token_secret", "token-secret"),
            ),
        ),
        lambda key: True,
    ),
    _token("daytona_api_key", r"\bdtn_[A-Za-z0-9]{32,}\b", ["dtn_"], lambda key: True),
    _token("e2b_api_key", r"\be2b_[a-f0-9]{40}\b", ["e2b_"], lambda key: True),
    # ---- other vendors' formats, from gitleaks' and kingfisher's rules (vendor_rules.py): never `live`
    # (their shapes are not checked here), so unverified at most: redacted, not blocking
    SecretKind(
        "vendor_token",
        tuple(Rule(regex, literals, min_entropy=entropy) for _, regex, literals, entropy in VENDOR_RULES),
        lambda key: False,
        specific=False,
    ),
    # ---- credentials in context: headers, URLs, docker auth, generic assignments
    SecretKind(
        "bearer_token",
        (Rule(rf"(?i:bearer)[ \t]{{1,8}}({_VALUE})", ("bearer",)),),
        judged=Judged.GENERIC,
        value_test=assignments.generated,
    ),
    _token(
        "basic_auth",
        rf"(?i:authorization[\"']?{_GAP}[:=]{_GAP}[\"']?basic){_SPACES}([A-Za-z0-9+/]{{8,}}={{0,2}})",
        ["authorization"],
        judge.basic_credentials,
    ),
    _token(
        "docker_auth", rf"\"auth\"{_GAP}:{_GAP}\"([A-Za-z0-9+/]{{8,}}={{0,2}})\"", ['"auth"'], judge.basic_credentials
    ),
    SecretKind(
        "url_password",
        (Rule(r"[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:@/'\"<>]{0,64}:([^\s@/'\"<>]{3,128})@[A-Za-z0-9.\[-]", ("://",)),),
        judged=Judged.GENERIC,
    ),
    SecretKind(
        "generic_password",
        (
            _assignment("password"),
            # `curl -u user:password` (gitleaks' curl-auth-user, MIT): the password is the secret
            Rule(rf"{_CURL}(?:-u|--user)(?:=|[ \t]{{1,5}})[\"']?[^\s:]{{0,64}}:[\"']?([^\s\"']{{3,128}})", ("curl",)),
            # `.netrc`: `machine host login user password value`, on one line or several
            Rule(rf"(?i:\blogin)[ \t]{{1,8}}\S{{1,64}}\s{{1,64}}(?i:password)[ \t]{{1,8}}({_VALUE})", ("login",)),
            # `mysql -pVALUE`, `docker login -u user -p value`, `sshpass -p value`
            Rule(
                r"(?i:\b(?:mysql|mysqldump|mysqladmin|mariadb|sshpass|login))\b[^\n]{0,200}?[ \t]-p(?:[ \t]{1,8})?"
                rf"[\"']?({_VALUE})",
                ("mysql", "mariadb", "sshpass", "login"),
            ),
        ),
        judged=Judged.GENERIC,
        value_test=assignments.password_value,
    ),
    SecretKind(
        "generic_secret",
        (_assignment("secret"),),
        judged=Judged.GENERIC,
        value_test=assignments.generated,
    ),
    SecretKind(
        "generic_api_key",
        (
            _assignment("api_key"),
            # `--api-token value`, `--password=value`: a flag whose name holds a credential word
            Rule(
                r"--[A-Za-z0-9_-]{0,30}(?i:apikey|token|key|secret|passw|passphrase|pass|pwd|auth|cred|private)"
                rf"[A-Za-z0-9_-]{{0,30}}(?:=|[ \t]{{1,8}})[\"']?({_VALUE})",
                _FLAG_LITERALS,
                refine=partial(assignments.refine_assignment, None),
            ),
            # `Authorization: Token value` (Bearer and Basic have kinds of their own)
            Rule(
                rf"(?i:authorization)[\"']?{_HGAP}[:=]{_HGAP}[\"']?(?i:token|apikey|api-key|key){_HGAP}({_VALUE})",
                ("authorization",),
            ),
            # a URL's signature or key parameter (`?sig=...`, `&key=...`): up to the next parameter
            Rule(r"[?&](?i:sig|signature|key)=([A-Za-z0-9%+/=_.~-]{12,400})", ("?sig=", "&sig=", "?key=", "&key=")),
            # `curl -H "Authorization: Token ..."`, `--header "Api-Token: ..."` (gitleaks' curl-auth-header, MIT)
            Rule(
                rf"{_CURL}(?:-H|--header)(?:=|[ \t]{{1,5}})[\"'](?i:[a-z0-9_-]{{0,20}}(?:authorization|token|key|auth)"
                r"[a-z0-9_-]{0,20}):[ \t]{0,8}(?:(?i:token|api-token|bearer|basic|digest)[ \t]{1,8})?([^\s\"']{8,200})",
                ("curl",),
            ),
        ),
        judged=Judged.GENERIC,
        value_test=assignments.generated,
    ),
)
BUILTIN_NAMES = frozenset(kind.name for kind in BUILTIN_KINDS)

# Public sample keys that ship in SDK docs and samples (Firebase's, as gitleaks allowlists them):
# matching them is expected and they grant nothing, so they are placeholders.
PUBLIC_SAMPLE_KEYS = frozenset(
    {
        "AIzaSyabcdefghijklmnopqrstuvwxyz1234567",
        "AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs",
        "AIzaSyCkEhVjf3pduRDt6d1yKOMitrUEke8agEM",
        "AIzaSyDMAScliyLx7F0NPDEJi1QmyCgHIAODrlU",
        "AIzaSyD3asb-2pEZVqMkmL6M9N6nHZRR_znhrh0",
        "AIzayDNSXIbFmlXbIE6mCzDLQAqITYefhixbX4A",
        "AIzaSyAdOS2zB6NCsk1pCdZ4-P6GBdi_UUPwX7c",
        "AIzaSyASWm6HmTMdYWpgMnjRBjxcQ9CKctWmLd4",
        "AIzaSyANUvH9H9BsUccjsu2pCmEkOPjjaXeDQgY",
        "AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM",
        "AIzaSyA4UrcGxgwQFTfaI3no3t7Lt1sjmdnP5sQ",
        "AIzaSyDSb51JiIcB6OJpwwMicseKRhhrOq1cS7g",
        "AIzaSyBF2RrAIm4a0mO64EShQfqfd2AFnzAvvuU",
        "AIzaSyBcE-OOIbhjyR83gm4r2MFCu4MJmprNXsw",
        "AIzaSyB8qGxt4ec15vitgn44duC5ucxaOi4FmqE",
        "AIzaSyA8vmApnrHNFE0bApF4hoZ11srVL_n0nvY",
        "AKIAIOSFODNN7EXAMPLE",
        # Azurite's (the storage emulator's) well-known account key, in Microsoft's docs
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    }
)


def all_kinds(extra: Sequence[SecretKind]) -> tuple[SecretKind, ...]:
    names = [kind.name for kind in extra]
    clashes = sorted(set(names) & BUILTIN_NAMES) + sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise ValueError(f"secret pattern names must be unique and not built-in: {', '.join(clashes)}")
    return (*BUILTIN_KINDS, *extra)


def _json_pairs(spec: str) -> list[tuple[str, ...]]:
    """(name, regex) pairs of the JSON forms; anything else is a ValueError, never a KeyError."""
    try:
        data = json.loads(spec)
    except json.JSONDecodeError as error:
        raise ValueError(f"secret patterns are not valid JSON: {error}") from None
    pairs: list[tuple[Any, ...]]
    if isinstance(data, dict):
        pairs = list(data.items())
    else:
        pairs = [(item.get("name"), item.get("regex")) if isinstance(item, dict) else (item,) for item in data]
    if not all(isinstance(part, str) for pair in pairs for part in pair):
        raise ValueError('secret patterns in JSON are {"name": "regex"} or [{"name": ..., "regex": ...}]')
    return pairs


def parse_pattern_specs(spec: str) -> list[SecretKind]:
    """Extra kinds from config: `name=regex;name2=regex2`, or JSON when a regex holds `;`.

    JSON is either `{"name": "regex"}` or `[{"name": ..., "regex": ...}]`.
    """
    spec = spec.strip()
    if not spec:
        return []
    if spec[0] in "[{":
        pairs = _json_pairs(spec)
    else:
        pairs = [tuple(part.split("=", 1)) for part in spec.split(";") if part.strip()]
    kinds = []
    for pair in pairs:
        if len(pair) != 2:
            raise ValueError(f"secret pattern spec {'='.join(pair)!r} is not name=regex")
        kinds.append(custom_kind(pair[0].strip(), pair[1].strip()))
    return kinds
