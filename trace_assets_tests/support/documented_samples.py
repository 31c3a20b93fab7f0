"""Whether a secret-shaped value is a documented sample: benchmarks/secret_holdout.py counts such
positives apart, and unit/test_documented_samples.py pins the tells it decides by."""

from __future__ import annotations

import base64
import binascii
import re

# A documented sample: a positive of the peers' tests that the issue asks us to keep (AWS's
# `...EXAMPLE...`, `xxxx`, jwt.io's sample). Decided by these tells alone, in the long words where a
# value sits (and a JWT's decoded header and claims), never by asking the scanner; fixed on the tuned
# split before the held-out split was scored with it.
SAMPLE_WORD = re.compile(r"example|sample|dummy|fake|placeholder|redacted|changeme|your[_-]", re.I)
ONE_CHARACTER_RUN = re.compile(r"([A-Za-z0-9])\1{5,}")
LONG_WORD = re.compile(r"[A-Za-z0-9_./+=~:@-]{16,}")  # where a value is: tells in its context do not count
JWT_PART = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}")
PEM_BODY = re.compile(r"-----BEGIN [A-Z ]*-----.*?-----END [A-Z ]*-----", re.S)
PROSE_PEM = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----\s*[A-Za-z]+ [A-Za-z]+")
WORDS_FOR_VALUES = re.compile(r"\busername:password\b|\buser:pass\b", re.I)


def _counting_run(text: str, length: int = 8) -> bool:
    """`length` characters counting up (`12345678`, `klmnopqr`)."""
    run, lowered = 1, text.lower()
    for before, char in zip(lowered, lowered[1:]):
        run = run + 1 if char.isalnum() and ord(char) == ord(before) + 1 else 1
        if run >= length:
            return True
    return False


def _decoded_jwt_parts(text: str) -> str:
    parts = []
    for part in JWT_PART.findall(text):
        try:
            parts.append(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode("utf-8", "replace"))
        except (binascii.Error, ValueError):
            continue
    return " ".join(parts)


def documented_sample(text: str) -> str | None:
    """The tell that makes a positive a documented sample, or None for a value that should be removed.
    A PEM block's body is left out: a real key's base64 spells `fAkE` or `000000` by chance (about one
    generated 1,024-bit key in a hundred), and a body in words is the last tell's."""
    seen = " ".join([*LONG_WORD.findall(PEM_BODY.sub(" ", text)), _decoded_jwt_parts(text)])
    if SAMPLE_WORD.search(seen):
        return "a sample word"
    if ONE_CHARACTER_RUN.search(seen):
        return "a run of one character"
    if _counting_run(seen):
        return "a counting run"
    if PROSE_PEM.search(text) or WORDS_FOR_VALUES.search(text):
        return "words in place of the value"
    return None
