"""The tells that make a match a placeholder, and the exact-format checks that make it live.

Placeholders: `...`, `xxxx`, EXAMPLE, `your_`, `<...>`, six equal or ascending characters, far too
few distinct characters. Generic values (a `password=` assignment, a URL's password) are never
`live`: they are `unverified` when they look random enough, else `placeholder` (`changeme`,
`${PASSWORD}`, `os.environ[...]`).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import zlib
from collections import Counter
from typing import Any

_FAKE_MARKERS = re.compile(
    r"\.\.\.|…|xxxx|XXXX|(.)\1{5}|[<>]|example|EXAMPLE|Example|placeholder|PLACEHOLDER|Placeholder"
    r"|redacted|REDACTED|Redacted|changeme|CHANGEME|dummy|DUMMY|Dummy|your[_-]|YOUR[_-]"
)
_KNOWN_PREFIX = re.compile(
    r"^(?:sk-ant-[a-z]+\d*-|sk-(?:proj|svcacct|admin|None|or-v1)-|sk-|gh[pousr]_|github_pat_|hf_|api_org_|xox[a-z]-"
    r"|xapp-|AKIA|ASIA|ABIA|ACCA|AIza|GR1348941|[a-z0-9]{2,8}[_-](?:v1_)?)"
)
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# Values that name a secret rather than hold one: variables, templates, lookups, code.
_REFERENCE = re.compile(
    r"^(?:\$|%\(|\{\{|<|\*{3,}|os\.|process\.env|getenv|env\(|secrets\.|vault:|None$|null$|true$|false$)"
    r"|[()\[\]{}]",
    re.IGNORECASE,
)
# snake_case, kebab-case, UPPER_SNAKE or dotted names: code, variables and resource names (a
# Kubernetes secret's `my-app-credentials`), not values.
_IDENTIFIER = re.compile(r"^(?:[a-z]+(?:[_-][a-z0-9]+)*|[A-Z]+(?:_[A-Z0-9]+)*|[A-Za-z_]\w*(?:\.\w+)+)$")
_PLACEHOLDER_WORDS = re.compile(
    r"^(?:pass(?:word|wd)?\d*|secret\d*|changeme|change_me|admin\d*|root|test\w*|demo\w*|sample\w*|default|"
    r"token|apikey|api_key|mysecret\w*|mypassword\w*|letmein|qwerty\w*|abc123\w*|123456\w*|hunter2|postgres|"
    r"user(?:name)?|guest|none|empty|required|optional|string|str)$",
    re.IGNORECASE,
)


def has_fake_marker(text: str) -> bool:
    """Tells a random credential body virtually never has: `...`, `xxxx`, EXAMPLE, 123456, 654321, AAAAAA."""
    if _FAKE_MARKERS.search(text):
        return True
    up = down = 1
    for previous, current in zip(text, text[1:]):
        up = up + 1 if ord(current) == ord(previous) + 1 else 1
        down = down + 1 if ord(current) == ord(previous) - 1 else 1
        if up >= 6 or down >= 6:
            return True
    return False


def entropy_bits(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def low_entropy(body: str) -> bool:
    """Far fewer distinct characters than a random body of this length would use."""
    return len(body) >= 8 and entropy_bits(body) < 0.5 * math.log2(min(len(body), 64))


def token_body(secret: str) -> str:
    """A token without its vendor's prefix (`ghp_`, `sk-proj-`, `glptt-`)."""
    return _KNOWN_PREFIX.sub("", secret)


def looks_fake(secret: str) -> bool:
    """A token whose body has a fake's tells, too few distinct characters, or only digits (`12312312...`)."""
    body = token_body(secret)
    return has_fake_marker(body) or low_entropy(body) or (len(body) >= 16 and body.isdigit())


def generic_value_is_placeholder(value: str) -> bool:
    """A keyword-context value that names, templates or stubs a secret instead of holding one."""
    value = value.strip("\"'`")
    return (
        len(value) < 8
        or _REFERENCE.search(value) is not None
        or _IDENTIFIER.match(value) is not None
        or _PLACEHOLDER_WORDS.match(value) is not None
        or has_fake_marker(value)
        or entropy_bits(value) < 2.8
    )


def json_segment(segment: str) -> Any:
    try:
        return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (ValueError, binascii.Error, RecursionError):
        return None


def b64_text(blob: str) -> str | None:
    """A base64 (standard or URL-safe) blob decoded to printable UTF-8 text, or None."""
    try:
        data = base64.b64decode(blob.translate(_URLSAFE) + "=" * (-len(blob) % 4), validate=True)
        text = data.decode()
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    return text if text.isprintable() or all(c.isprintable() or c in "\r\n\t" for c in text) else None


_URLSAFE = str.maketrans("-_", "+/")


def jwt_payload_is_fake(token: str) -> bool:
    """jwt.io's sample and friends: the claims themselves say example ("sub": "1234567890")."""
    payload = json_segment(token.split(".")[1])
    values = payload.values() if isinstance(payload, dict) else ()
    return any(isinstance(value, str) and has_fake_marker(value) for value in values)


def is_signed_jwt(token: str) -> bool:
    """Header and payload decode to JSON objects, the header names a real algorithm, a signature follows."""
    header, payload, signature = (token.split(".") + ["", ""])[:3]
    header_json, payload_json = json_segment(header), json_segment(payload)
    return (
        isinstance(header_json, dict)
        and isinstance(header_json.get("alg"), str)
        and header_json["alg"].lower() != "none"
        and isinstance(payload_json, dict)
        and len(signature) >= 16
    )


def crc32_base62_ok(token: str, prefix_len: int) -> bool:
    """GitHub's and npm's classic tokens: 30 random base62 characters, then their CRC32 in base62."""
    if len(token) != prefix_len + 36:
        return False
    random_part, checksum = token[prefix_len : prefix_len + 30], token[prefix_len + 30 :]
    value, digits = zlib.crc32(random_part.encode()), ""
    while value:
        value, digit = divmod(value, 62)
        digits = _BASE62[digit] + digits
    return digits.rjust(6, "0") == checksum


def is_github_token(token: str) -> bool:
    """Classic tokens end in base62(crc32(random part)); fine-grained PATs have a fixed layout."""
    if token.startswith("github_pat_"):
        return re.fullmatch(r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}", token) is not None
    return crc32_base62_ok(token, 4)


_OPENAI_HALVES = {58, 74}  # around the marker of project, service-account and admin keys (gitleaks' rule)


def is_openai_key(key: str) -> bool:
    """`T3BlbkFJ` (base64 of "OpenAI") inside, with halves of equal length around it (or 58 and 74
    characters): a key cut by a wrap, or run on into the next line's word, is not one."""
    head, marker, tail = key.partition("T3BlbkFJ")
    body = head.split("-", 2)[-1] if head.startswith("sk-") and head.count("-") >= 2 else head.removeprefix("sk-")
    return bool(marker) and (len(body) == len(tail) or {len(body), len(tail)} <= _OPENAI_HALVES)


def has_mixed_charset(secret: str) -> bool:
    """A random 40-char AWS secret all but always mixes upper, lower and digits; a git sha does not."""
    return all(re.search(charset, secret) for charset in ("[A-Z]", "[a-z]", "[0-9]"))


def mixes_letters_and_digits(secret: str) -> bool:
    """A random hex key (W&B's 40, Databricks') holds both; a word, a number or `local-` alone does not."""
    body = secret.removeprefix("local-")
    return bool(re.search("[a-z]", body) and re.search("[0-9]", body))


def decodes_to_bytes(length: int) -> Any:
    """A check that the secret is base64 of exactly `length` bytes (Azure storage keys: 64)."""

    def check(secret: str) -> bool:
        try:
            return len(base64.b64decode(secret, validate=True)) == length
        except (ValueError, binascii.Error):
            return False

    return check


def is_discord_bot_token(token: str) -> bool:
    """A Discord bot token's first part is the bot's user id (a 17-20 digit snowflake) in base64."""
    user_id = b64_text(token.split(".", 1)[0])
    return user_id is not None and user_id.isdigit() and 17 <= len(user_id) <= 20


def is_age_secret_key(key: str) -> bool:
    """An age identity: Bech32 (`AGE-SECRET-KEY-` then `1` and 58 data characters) whose checksum holds."""
    hrp, _, data = key.lower().rpartition("1")
    values = [_BECH32.find(c) for c in data]
    if not hrp or len(data) != 58 or -1 in values:
        return False
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    return _bech32_polymod(expanded + values) == 1


_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _bech32_polymod(values: list[int]) -> int:
    generator = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
    checksum = 1
    for value in values:
        top = checksum >> 25
        checksum = (checksum & 0x1FFFFFF) << 5 ^ value
        for i in range(5):
            checksum ^= generator[i] if (top >> i) & 1 else 0
    return checksum


def basic_credentials(secret: str) -> bool:
    """An HTTP Basic or docker `auth` value: base64 of `user:password` with a real-looking password."""
    text = b64_text(secret)
    if text is None or ":" not in text:
        return False
    return not generic_value_is_placeholder(text.split(":", 1)[1])
