"""Private-key blocks: PEM (`-----BEGIN ... PRIVATE KEY-----`) and PGP armour, judged by decoding them.

A block that loads as a key is `live`; one holding a placeholder, no key material, or complete
yet shorter than the smallest real key of its type is `placeholder`; anything else (truncated, or
full length but unloadable) is `unverified`, since it may still be part of a real key.
"""

from __future__ import annotations

import base64
import binascii
import re
import textwrap
from dataclasses import dataclass

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from trace_assets.secret_scan.verdicts import Verdict

# PEM: real newlines or JSON-escaped ones (a key printed inside a JSON string), base64 lines,
# `Proc-Type:`-style headers, and the placeholder lines samples use (`...`, `<your key>`).
_PEM_LABEL = r"(?:[A-Z0-9]+ )*"
_PEM_NEWLINE = r"(?:\r?\n|(?:\\r)?\\n)"
_PEM_WORD = r"[A-Za-z0-9+/=._*<>\[\]()…]+"
_PEM_LINE = rf"[ \t]*(?:{_PEM_WORD}(?: {_PEM_WORD})*|[A-Za-z-]+: [^\r\n\\]*)?[ \t]*"
# One line per row of base64; a last line cut off by the end of the text (truncated output) still
# belongs to the block. Or all on one line, base64 chunks separated by spaces or by nothing.
_PEM_LINES = rf"[ \t]*{_PEM_NEWLINE}(?:{_PEM_LINE}{_PEM_NEWLINE})*(?:{_PEM_LINE}$)?"
_PEM_SPACED = r"(?:[ \t]+[A-Za-z0-9+/=]{16,})+[ \t]*"
# Or its newlines removed, the body run on right after the marker (a key pasted into a quoted env value).
_PEM_RUN_ON = r"[A-Za-z0-9+/]{16,}={0,2}"
_PEM_BODY = rf"(?:{_PEM_LINES}|{_PEM_SPACED}|{_PEM_RUN_ON})"
PEM_BLOCK = rf"-----BEGIN {_PEM_LABEL}PRIVATE KEY-----{_PEM_BODY}?(?:[ \t]*-----END {_PEM_LABEL}PRIVATE KEY-----)?"
PEM_MARKER = rf"-----(?:BEGIN|END) {_PEM_LABEL}PRIVATE KEY-----"
PGP_BLOCK = rf"-----BEGIN PGP PRIVATE KEY BLOCK-----{_PEM_BODY}?(?:[ \t]*-----END PGP PRIVATE KEY BLOCK-----)?"

_PEM_HEAD = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY(?: BLOCK)?-----")
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
    "PGP": 80,
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
# OpenPGP packet tags of secret keys and subkeys (old and new packet formats).
_PGP_SECRET_TAGS = {5, 7}


@dataclass(frozen=True)
class PemAnalysis:
    """What a key block holds, in counts and flags; it carries no key material."""

    kind: str
    truncated: bool
    parseable: bool
    encrypted: bool
    placeholder: bool
    decoded_bytes: int
    min_bytes: int
    verdict: Verdict


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


def _pgp_secret_key(b64: str) -> bool:
    """The armour's first packet is a secret key: enough to tell a real export from a stub."""
    try:
        data = base64.b64decode(b64[: len(b64) // 4 * 4])
    except (ValueError, binascii.Error):
        return False
    if not data or not data[0] & 0x80:
        return False
    tag = data[0] & 0x3F if data[0] & 0x40 else (data[0] >> 2) & 0x0F
    return tag in _PGP_SECRET_TAGS


def analyse_pem_block(block: str) -> PemAnalysis:
    """Decode a matched block: its type, whether it loads as a key, `...` placeholders, its size."""
    text = block.replace("\\r", "").replace("\\n", "\n")  # JSON-escaped newlines
    head = _PEM_HEAD.match(text)
    label, start = (head.group(1), head.end()) if head else ("", 0)
    pgp = label == "PGP "
    end = text.find("-----END ", start)
    truncated = end < 0
    lines = [line.strip() for line in text[start : None if truncated else end].splitlines()]
    header_lines = [line for line in lines if ": " in line]
    data_lines = [line for line in lines if ": " not in line]
    if pgp and data_lines and data_lines[-1].startswith("="):
        data_lines.pop()  # the armour's CRC24 line
    data = "".join(data_lines)
    b64 = re.sub(r"[^A-Za-z0-9+/]", "", data)
    decoded_bytes = len(b64) * 3 // 4
    der_head = base64.b64decode(b64[: min(44, len(b64) // 4 * 4)])
    kind = "PGP" if pgp else _pem_kind(label.strip(), der_head)
    min_bytes = PEM_MIN_DECODED_BYTES.get(kind, PEM_MIN_DECODED_BYTES["PKCS8"])
    placeholder = _PEM_PLACEHOLDER.search(data) is not None
    encrypted = False
    if truncated:
        loads = False
    elif pgp:
        loads = _pgp_secret_key(b64) and decoded_bytes >= min_bytes
    else:
        loads, encrypted = _load_private_key(label, header_lines, b64)
    parseable = loads or (encrypted and decoded_bytes >= min_bytes)
    if parseable:
        verdict = Verdict.LIVE
    elif placeholder or decoded_bytes < _NO_KEY_MATERIAL_BYTES or (not truncated and decoded_bytes < min_bytes):
        verdict = Verdict.PLACEHOLDER
    else:
        verdict = Verdict.UNVERIFIED
    return PemAnalysis(kind, truncated, parseable, encrypted, placeholder, decoded_bytes, min_bytes, verdict)
