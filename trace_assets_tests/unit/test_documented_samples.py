"""The held-out benchmark's documented-sample tells: what counts as a sample the issue asks us to keep
is decided on the text alone, where a value sits, never by the scanner under measure."""

import base64
import json

import pytest

from trace_assets_tests.support.documented_samples import documented_sample


def _jwt(claims: dict) -> str:
    def part(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"


@pytest.mark.parametrize(
    ("text", "tell"),
    [
        ('aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"', "a sample word"),
        ("https://hooks.slack.com/services/Txxxxxxxx/Bxxxxxxxx/xxxxxxxxxxxxxxxxxxxxxxxx", "a run of one character"),
        ("HEROKU_KEY=12345678-ABCD-ABCD-ABCD-1234567890AB", "a counting run"),
        (f"token: {_jwt({'sub': '1234567890', 'name': 'John Doe'})}", "a counting run"),
        (f"Authorization: Bearer {_jwt({'aud': 'example-app'})}", "a sample word"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nsuper secret private key here\n-----END RSA PRIVATE KEY-----",
            "words in place of the value",
        ),
    ],
)
def test_a_sample_is_told_by_its_value(text: str, tell: str) -> None:
    assert documented_sample(text) == tell


@pytest.mark.parametrize(
    "text",
    [
        "GITHUB_TOKEN=ghp_Bn7QzK2vLx9Wd4TfR8yHs3MpA6cJe1UgN5oi",
        # a tell in the context, not in the value: the value still counts as a secret
        "python examples/cli.py sk-proj-Xi8tdMjHV6pmbBbwilTeT4BlbkFJ3UDnpdEwNNm6wVBpYM0o",
        "# paste your token below\nhf_token: hf_QzWvBnKpLrTsYxUaCdEfGhJk",
        f"token: {_jwt({'sub': 'u-81f3', 'iat': 1733500000})}",
        # a key's base64 that spells a sample word by chance (a generated key does, now and then)
        "-----BEGIN PRIVATE KEY-----\nMIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQCfAkEq8Zr3n0wKp1Vd\n-----END PRIVATE KEY-----",
    ],
)
def test_a_value_without_a_tell_is_not_a_sample(text: str) -> None:
    assert documented_sample(text) is None
