"""Credentials by assignment: a name holding a credential word, then a value that looks generated.

Env dumps, `.env` files, configs and command lines print credentials most often as `NAME_TOKEN=value`.
Whether such a match is a credential depends on both sides, each decided here on plain strings:

- the name (`credential_name`): a credential word is one of its parts (`MYCOMPANY_API_TOKEN`,
  `genericToken`, `--api-token`, `auth.token`), not a piece of another word (`keyboard`, `monkey`,
  `tokenizer`), and it does not name something about the credential (`TOKEN_TTL`, `SECRET_NAME`,
  `KEY_ALGORITHM`); a hex or UUID value after an id's name (`TOKEN_SHA`, `AUTH_REQUEST_ID`) is an id;
- the value (`generated`): base62, base64, hex of 32 or more, a UUID, a password with symbols, 12
  characters or more; never a name, path, URL, reference, count, enum word, masked value or
  placeholder, nor base64 of a placeholder login (`dXNlcjpwYXNz`, `user:pass`).

A value never crosses a line break or a closing quote (the rules' classes hold neither); in a URL's
query a value ends at the next parameter.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Literal

from trace_assets.secret_scan.judge import entropy_bits, generic_value_is_placeholder, has_fake_marker

# The kinds of credential a name can hold, each its own kind of finding (`generic_password`, ...),
# and the credential words of each, as a name's parts (in the order its rule's regex tries them).
CredentialWord = Literal["password", "secret", "api_key"]
WORDS: dict[CredentialWord, tuple[str, ...]] = {
    "password": ("password", "passwd", "passphrase", "pass", "pwd", "passwords"),
    "secret": ("secrets", "secret"),
    "api_key": ("apikey", "tokens", "token", "keys", "key", "auth", "credentials", "credential", "creds", "private"),
}
# A joined part ending in one of the long words counts too (`PGPASSWORD`, `githubtoken`), but not in
# the short ones (`monkey`, `bypass`, `oauth`).
CREDENTIAL_WORDS = frozenset(word for words in WORDS.values() for word in words)
_JOINED_SUFFIXES = ("token", "secret", "password", "passwd", "apikey", "passphrase", "credentials")
# A name whose last part is one of these names something about a credential, not the credential
# (`credentialId`, `KMS_KEY_ID`: an id names one; the key ids that matter have kinds of their own).
NOT_A_VALUE_PARTS = frozenset(
    (
        "name names path paths file files dir url uri urls endpoint host hostname port type types kind "
        "algorithm algorithms alg ttl expiry expires expiration lifetime timeout length len size count "
        "limit max min prefix suffix header field env var variable backend provider store format mode "
        "enabled disabled required method scope scopes region location label policy rotation arn ref "
        "source template version usage budget id ids error errors exception warning"
    ).split()
)
# A hex or UUID value after a name holding one of these is an id, a digest or a commit, not a credential.
ID_PARTS = frozenset(
    (
        "id ids uuid guid sha sha1 sha256 hash digest checksum etag commit fingerprint request trace span "
        "run trial build revision rev nonce serial"
    ).split()
)
_NAME_CHARS = re.compile(r"[A-Za-z0-9_.-]*")
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_HEX = re.compile(r"[0-9a-fA-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
MIN_GENERATED = 12


def name_parts(name: str) -> list[str]:
    """`MYCOMPANY_API_TOKEN` -> mycompany, api, token; `genericToken` -> generic, token; `X-Api-Key`,
    `auth.token`, `--api-token` likewise."""
    return [part.lower() for part in _PARTS.findall(name)]


def credential_name(name: str) -> bool:
    """A credential word is a part of `name` and its last part does not name something else about it."""
    parts = name_parts(name)
    if not parts or parts[-1] in NOT_A_VALUE_PARTS or "existing" in parts:  # `existingSecret`: a secret's name
        return False
    return any(part in CREDENTIAL_WORDS or part.endswith(_JOINED_SUFFIXES) for part in parts)


def id_name(name: str) -> bool:
    """A name holding an id's word (`TOKEN_SHA`, `AUTH_REQUEST_ID`): hex and UUIDs after it are ids."""
    return not ID_PARTS.isdisjoint(name_parts(name))


def hex_or_uuid(value: str) -> bool:
    return bool(_HEX.fullmatch(value) or _UUID.fullmatch(value))


# Values that name, template or stub a secret: references, lookups, masks (`****`, `####`).
_REFERENCE = re.compile(
    r"^(?:\$\{|\$\(|\$[A-Za-z_][A-Za-z0-9_]*$|%\(|\{\{|<|os\.|process\.env|import\.meta|getenv|env\(|secrets?\.|vault:|ref\+|arn:|projects/)"
    r"|\*{3,}|#{3,}|\.{3,}|[(){}\[\]]",
    re.IGNORECASE,
)
# Words a test's or a doc's stand-in holds (`has_fake_marker` has `example`, `dummy`, `your_`).
_SAMPLE_WORD = re.compile(r"fake|test|sample", re.IGNORECASE)
# A path (`/run/secrets/x`, `~/.config/x`, `C:\\keys`), a version or a date; names are `wordy`.
_PATH = re.compile(r"^(?:(?:~|\.{1,2})?/[a-z]{2,}/|[A-Za-z]:\\)")
# Words or numbers of one case joined by separators: a resource's name (`my-release-postgresql`).
_NAME = re.compile(
    r"^(?:[a-z]+[0-9]*|[0-9]+)(?:[-_./:](?:[a-z]+[0-9]*|[0-9]+))+$|^(?:[A-Z]+[0-9]*|[0-9]+)(?:[-_./:](?:[A-Z]+[0-9]*|[0-9]+))+$"
)
_VERSION_OR_DATE = re.compile(r"^v?\d+(?:[._:T/-]\d+)+[A-Za-z]*$")
# The 253 letter pairs that make 97% of those in the words of CPython 3.11's standard library (its
# modules' identifiers, comments and docstrings, tests left out): a word's pairs are nearly all
# among them, a random run's a third of the time.
_COMMON_PAIRS = frozenset(
    pair
    for text in (
        "abacadagaiakalamanaparasatauavaybabebibjblbobrbubycacechcickclcocrcsctcudadddedidldodrdsdueaebec",
        "edeeefegeielemeneoepeqeresetevewexeyfafefffiflfofrftfugeghgiglgngrgsguhahehihohrhtiaibicidieifig",
        "iliminioipirisitivixizjekekikslaldlelflilllolsltlulymambmemimmmompmsmunancndnenfngninknlnnnonpns",
        "ntnunvoaobocodofogoiokolomonoooporosotouovowpapepiplpoppprptpupyqurarcrdrergrirkrlrmrnrorrrsrtru",
        "rvrysascsesgshsislsospssstsusytatctdtethtitltotptrtstttutyuaubucueufuguiulumunupurusutvaveviwawe",
        "whwiwowrxcxexixpxtypysytze",
    )
    for pair in (text[i : i + 2] for i in range(0, len(text), 2))
)
_LETTER_RUNS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def wordy(value: str) -> bool:
    """Most of its letters sit in word-like runs (`hellOworld380_testin`, `prodDbCredentials`): four
    letters or more of one case (a capital may lead), four in five of their letter pairs common in
    English words. A generated value's letter runs are short, or their pairs rare (`qzkw`)."""
    letters = sum(char.isalpha() for char in value)
    in_words = sum(len(run) for run in _LETTER_RUNS.findall(value) if len(run) >= 4 and _word_like(run.lower()))
    return letters > 0 and in_words * 5 >= letters * 3


def _word_like(run: str) -> bool:
    pairs = [run[i : i + 2] for i in range(len(run) - 1)]
    return sum(pair in _COMMON_PAIRS for pair in pairs) * 5 >= len(pairs) * 4


def _transitions(value: str) -> float:
    """How often the character class (upper, lower, digit, other) changes from one character to the next."""

    def cls(char: str) -> int:
        return 0 if char.isupper() else 1 if char.islower() else 2 if char.isdigit() else 3

    changes = sum(cls(a) != cls(b) for a, b in zip(value, value[1:]))
    return changes / max(len(value) - 1, 1)


def not_a_value(value: str) -> bool:
    """A reference, mask, placeholder, name, path, URL, number, version or date: never a credential."""
    return bool(
        _REFERENCE.search(value)
        or "://" in value
        or has_fake_marker(value)
        or _SAMPLE_WORD.search(value) is not None
        or _PATH.match(value)
        or _VERSION_OR_DATE.match(value)
        or _NAME.match(value)
        or value.isdigit()
        or ("@" in value and "." in value.rsplit("@", 1)[-1])  # an e-mail address
    )


def _decoded_login(value: str) -> str | None:
    """The text base64 of a login decodes to (`dXNlcjpwYXNz` -> `user:pass`), or None."""
    if len(value) % 4 or not re.fullmatch(r"[A-Za-z0-9+/_-]+={0,2}", value):
        return None
    try:
        text = base64.b64decode(value.translate(str.maketrans("-_", "+/")), validate=True).decode()
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    return text if text.isprintable() and ":" in text else None


_TEST_WORDS = re.compile(r"hello|world|test|example|sample|dummy|fake|demo|lorem|ipsum|foobar|secret|token", re.I)


def sample_body(body: str) -> bool:
    """A vendor's prefix on words (`glptt-hellOworld380_testin`): a test string, not a key."""
    return _TEST_WORDS.search(body) is not None and wordy(body)


def placeholder_login(value: str) -> bool:
    """Base64 of a login whose password is no credential (`dXNlcjpwYXNz`, `user:pass`)."""
    login = _decoded_login(value)
    return login is not None and not password_value(login.split(":", 1)[1])


def generated(value: str, min_length: int = MIN_GENERATED) -> bool:
    """A value that looks made by a generator, not written by a person: see the module's docstring."""
    value = value.strip("\"'`")
    if len(value) < min_length or not_a_value(value):
        return False
    if _UUID.fullmatch(value):
        return True
    if _HEX.fullmatch(value):  # a hex credential is long; shorter hex is a commit's or an id's
        return len(value) >= 32 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
    login = _decoded_login(value)
    if login is not None:  # HTTP Basic's `user:password`: credential when its password is one
        return generated(login.split(":", 1)[1], 8)
    classes = sum(
        (any(c.isupper() for c in value), any(c.islower() for c in value), any(c.isdigit() for c in value))
    ) + (not value.isalnum())
    return (
        classes >= 2
        and entropy_bits(value) >= min(3.0, 0.8 * len(set(value)) ** 0.5)
        and not wordy(value)
        and _transitions(value) >= 0.1
    )


def password_value(value: str) -> bool:
    """A password's value: generated, or 8 characters or more that are no word, name or placeholder."""
    value = value.strip("\"'`")
    if _decoded_login(value) is not None:
        return not placeholder_login(value)
    return generated(value) or (
        len(value) >= 8 and not not_a_value(value) and not wordy(value) and not generic_value_is_placeholder(value)
    )


def strongest_word(name: str) -> CredentialWord:
    """Which kind of credential a name holds: a password's word over a secret's over the others."""
    parts = set(name_parts(name))
    if parts & set(WORDS["password"]) or any(part.endswith(("password", "passwd", "passphrase")) for part in parts):
        return "password"
    if parts & set(WORDS["secret"]) or any(part.endswith("secret") for part in parts):
        return "secret"
    return "api_key"


def refine_assignment(word: CredentialWord | None, text: str, start: int, match: str, secret: str) -> str | None:
    """The secret of an assignment matched at `start` of `text` (its regex starts at the credential
    word), or None when the whole name holds no credential word as a part, names something about one,
    is an id's name before a hex or UUID value, or is another `word`'s (`strongest_word`; None: any).
    In a URL's query (`?access_token=...&x=1`) the value ends at the next parameter."""
    head = _NAME_CHARS.match(match)
    before = text[max(0, start - 40) : start]
    prefix = _name_prefix(before)
    name = (prefix + (head.group() if head else "")).lstrip("-.")
    if name.endswith(("-", ".")):  # `KEY-----`: a PEM marker
        return None
    if not credential_name(name) or (hex_or_uuid(secret) and id_name(name)):
        return None
    if word is not None and strongest_word(name) != word:
        return None
    if name.lower() == "key" and not _in_query(text, start - len(prefix)):
        return None  # a bare `key` is a dict's, a cache's or an object's key far more often
    if _in_query(text, start - len(prefix)):
        secret = re.split(r"[&#]", secret, maxsplit=1)[0]
    return secret or None


def _name_prefix(before: str) -> str:
    """The name characters just before a match (`MYCOMPANY_API_` before `TOKEN`)."""
    index = len(before)
    while index and (before[index - 1].isalnum() or before[index - 1] in "_.-"):
        index -= 1
    return before[index:]


def _in_query(text: str, name_start: int) -> bool:
    return name_start > 0 and text[name_start - 1] in "?&"
