"""The secret scanner: a planted corpus is found in full with the right verdicts, the project's real
data yields no false `live`, the report never repeats a secret, redaction keeps the schema."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import zlib
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from trace_assets.secret_scan.kinds import BUILTIN_KINDS, custom_kind, parse_pattern_specs
from trace_assets.secret_scan.pem import analyse_pem_block
from trace_assets.secret_scan.redaction import redact
from trace_assets.secret_scan.scanner import ScanOptions, SecretScanner, overall_verdict

DATA = Path(__file__).resolve().parent.parent / "data"
SAMPLE_ROWS = DATA / "harbor_sample" / "harbor-export-last.jsonl"
SAMPLE_TRACES = Path(__file__).resolve().parent.parent.parent / "sample_traces" / "rl-sample-run" / "trace_jobs"
TRUTH = json.loads((DATA / "harbor_sample" / "truth.json").read_text())
PROXY_KEY = custom_kind("internal_proxy_key", r"pxk_[0-9a-f]{32}")
WITH_PROXY = ScanOptions((PROXY_KEY,))

rng = random.Random(7)  # random bodies, the same on every run
ALNUM = string.ascii_letters + string.digits
BASE32 = string.ascii_uppercase + "234567"
BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


def rand(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def fingerprint(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()[:16]


def b64url(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def github_classic(prefix: str = "ghp_") -> str:
    """30 random base62 characters and their CRC32 in base62, as GitHub mints them."""
    body = rand(ALNUM, 30)
    value, digits = zlib.crc32(body.encode()), ""
    while value:
        value, digit = divmod(value, 62)
        digits = BASE62[digit] + digits
    return prefix + body + digits.rjust(6, "0")


def aws_secret() -> str:
    """40 base64 characters that mix upper, lower and digits, as nearly every real one does."""
    while True:
        candidate = rand(ALNUM + "/+", 40)
        if all(
            any(c in charset for c in candidate)
            for charset in (string.ascii_uppercase, string.ascii_lowercase, string.digits)
        ):
            return candidate


def jwt(payload: dict) -> str:
    return f"{b64url({'alg': 'HS256', 'typ': 'JWT'})}.{b64url(payload)}.{rand(ALNUM + '-_', 43)}"


def pem(key, fmt: serialization.PrivateFormat, encryption=None) -> str:
    encryption = encryption or serialization.NoEncryption()
    return key.private_bytes(serialization.Encoding.PEM, fmt, encryption).decode().strip()


RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
RSA_PKCS8 = pem(RSA_KEY, serialization.PrivateFormat.PKCS8)
# BEGIN and 8 base64 lines of another key, then the terminal cut it off.
TRUNCATED_PEM = "\n".join(
    pem(rsa.generate_private_key(65537, 1024), serialization.PrivateFormat.TraditionalOpenSSL).splitlines()[:9]
)
PEM_PLACEHOLDER = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7...\n...\n-----END PRIVATE KEY-----"


@dataclass(frozen=True)
class Plant:
    kind: str
    secret: str
    verdict: str


PLANTS = {
    "github": Plant("github_token", github_classic(), "live"),
    "github_server": Plant("github_token", github_classic("ghs_"), "live"),
    "github_bad_checksum": Plant("github_token", "gho_" + rand(ALNUM, 36), "unverified"),
    "github_pat": Plant("github_token", f"github_pat_{rand(ALNUM, 22)}_{rand(ALNUM, 59)}", "live"),
    "github_fake": Plant("github_token", "ghp_" + "x" * 36, "placeholder"),
    "aws_id": Plant("aws_access_key_id", "AKIA" + rand(BASE32, 16), "live"),
    "aws_secret": Plant("aws_secret_access_key", aws_secret(), "live"),
    "aws_session_id": Plant("aws_access_key_id", "ASIA" + rand(BASE32, 16), "live"),
    "aws_example": Plant("aws_access_key_id", "AKIAIOSFODNN7EXAMPLE", "placeholder"),
    "aws_not_base32": Plant("aws_access_key_id", "AKIA0189" + rand("ABCDEFGHJKLMNPQRSTUVWXYZ", 12), "near_miss"),
    "jwt": Plant("jwt", jwt({"sub": rand(ALNUM, 12), "iat": 1714000000, "role": "admin"}), "live"),
    "jwt_sample": Plant("jwt", jwt({"sub": "1234567890", "name": "John Doe", "iat": 1516239022}), "placeholder"),
    "jwt_garbled": Plant("jwt", f"{b64url({'alg': 'HS256'})}.eyJ{rand(ALNUM, 30)}.{rand(ALNUM, 43)}", "unverified"),
    "openai": Plant("openai_api_key", f"sk-proj-{rand(ALNUM + '-_', 74)}T3BlbkFJ{rand(ALNUM + '-_', 74)}", "live"),
    "openai_shape_only": Plant("openai_api_key", "sk-" + rand(ALNUM, 48), "unverified"),
    "openai_fake": Plant("openai_api_key", "sk-proj-" + "x" * 32, "placeholder"),
    "anthropic": Plant("anthropic_api_key", f"sk-ant-api03-{rand(ALNUM + '-_', 93)}AA", "live"),
    "anthropic_short": Plant("anthropic_api_key", "sk-ant-" + rand(ALNUM, 30), "unverified"),
    "hf": Plant("hf_token", "hf_" + rand(string.ascii_letters, 34), "live"),
    "hf_fake": Plant("hf_token", "hf_" + "A" * 34, "placeholder"),
    "slack": Plant(
        "slack_token", f"xoxb-{rand(string.digits, 12)}-{rand(string.digits, 13)}-{rand(ALNUM, 24)}", "live"
    ),
    "google": Plant("google_api_key", "AIza" + rand(ALNUM + "-_", 35), "live"),
    "proxy": Plant("internal_proxy_key", "pxk_" + rand("0123456789abcdef", 32), "live"),
    "pem_pkcs8": Plant("private_key", RSA_PKCS8, "live"),
    "pem_traditional": Plant("private_key", pem(RSA_KEY, serialization.PrivateFormat.TraditionalOpenSSL), "live"),
    "pem_in_json": Plant("private_key", RSA_PKCS8.replace("\n", "\\n"), "live"),  # echoed inside a JSON string
    "pem_openssh": Plant(
        "private_key", pem(ed25519.Ed25519PrivateKey.generate(), serialization.PrivateFormat.OpenSSH), "live"
    ),
    "pem_encrypted": Plant(
        "private_key",
        pem(RSA_KEY, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"hunter22")),
        "live",
    ),
    "pem_placeholder": Plant("private_key", PEM_PLACEHOLDER, "placeholder"),
    "pem_truncated": Plant("private_key", TRUNCATED_PEM + "\n", "unverified"),
}


def terminal(*lines: str) -> str:
    prompt = "root@sandbox:/app# "
    return "\n".join([prompt + "ls -la", "-rw-r--r-- 1 root root 4096 task-12.py disk-usage.txt", *lines, prompt])


def row(
    trial: str, messages: list[str], instruction: str | None = None, verifier: str | None = None, source: str = "main"
) -> dict:
    """A Harbor-shaped row; the task is the trial name's prefix."""
    return {
        "conversations": [{"role": ("user", "assistant")[i % 2], "content": text} for i, text in enumerate(messages)],
        "agent": "terminus-2",
        "model": "m",
        "model_provider": "p",
        "date": "2025-01-01",
        "task": trial.split("__")[0],
        "episode": "episode-1",
        "run_id": "run-1",
        "trial_name": trial,
        "result": "1.0",
        "instruction": instruction,
        "verifier_output": verifier,
        "trace_source": source,
    }


def corpus_rows() -> list[dict]:
    """Every plant in a realistic place: terminal output, an agent's JSON reply, fixtures, verifier logs."""
    s = {name: plant.secret for name, plant in PLANTS.items()}
    env = terminal("$ cat .env", f"GITHUB_TOKEN={s['github']}", f"HF_TOKEN={s['hf']}")
    aws = terminal(
        "$ cat ~/.aws/credentials.csv",
        "Access key ID,Secret access key",
        f"{s['aws_id']},{s['aws_secret']}",
        f"session: {s['aws_session_id']}",
    )
    web = terminal(
        f"curl -H 'Authorization: Bearer {s['jwt']}' localhost",
        f"jwt.io sample: {s['jwt_sample']}",
        f"broken {s['jwt_garbled']}",
    )
    llm = terminal(
        f"OPENAI_API_KEY={s['openai']}", f"legacy={s['openai_shape_only']}", f"ANTHROPIC_API_KEY={s['anthropic']}"
    )
    keys = terminal("$ cat key.pem", s["pem_pkcs8"], "$ cat id_rsa", s["pem_traditional"])
    reply = json.dumps({"analysis": "The key is:", "commands": [{"keystrokes": "echo done\n"}]}).replace(
        "The key is:", s["pem_in_json"]
    )
    return [
        row("env-leak__a1", ["You are an agent.", env, '{"analysis": "found tokens"}']),
        # Later in the same trial, a subagent row repeating part of the history.
        row(
            "env-leak__a1",
            ["You are an agent.", terminal("$ cat .env", f"GITHUB_TOKEN={s['github']}"), "ok"],
            source="summarization-1-summary",
        ),
        row("aws-cli__b2", ["sys", aws], instruction=f"Docs say e.g. {s['aws_example']} and {s['aws_not_base32']}"),
        row("web-auth__c3", ["sys", web]),
        row(
            "llm-keys__d4",
            ["sys", llm],
            verifier=f"FAILED test_keys.py - KeyError: '{s['anthropic_short']}'\nexpected placeholder {s['openai_fake']}",
        ),
        row(
            "fixtures__e5",
            ["sys", "nothing to see"],
            instruction=f"Fixtures: '{s['github_fake']}', '{s['hf_fake']}', {s['github_bad_checksum']}, {s['github_pat']}, {s['github_server']}",
        ),
        row(
            "chat__f6",
            ["sys", terminal(f"SLACK_BOT_TOKEN={s['slack']} MAPS_KEY={s['google']}", f"proxy auth: {s['proxy']}")],
        ),
        row("keys__g7", ["sys", keys, reply, terminal("$ cat ~/.ssh/id_ed25519", s["pem_openssh"])]),
        row(
            "keys__h8",
            ["sys", terminal("$ head -9 server.key", TRUNCATED_PEM)],
            instruction=f"Use a key like:\n{s['pem_placeholder']}\n",
            verifier=f"enc:\n{s['pem_encrypted']}\n",
        ),
        row(
            "clean__i9",
            ["sys", terminal("commit 3f786850e387550fdab836ed7e6dc881de23001b", "scikit-learn sk-learn task-runner")],
        ),
    ]


def rows_holding(rows: list[dict], secret: str) -> list[int]:
    def texts(r: dict) -> list[str]:
        return [r["instruction"] or "", r["verifier_output"] or "", *(m["content"] for m in r["conversations"])]

    return [i for i, r in enumerate(rows) if any(secret in t for t in texts(r))]


@pytest.fixture(scope="module")
def planted() -> tuple[pl.DataFrame, dict[str, list[int]], dict]:
    """The corpus as a frame, which rows hold each plant, and the scan report."""
    rows = corpus_rows()
    where = {name: rows_holding(rows, plant.secret) for name, plant in PLANTS.items()}
    assert all(where.values())
    frame = pl.DataFrame(rows)
    scanner = SecretScanner("run-1", WITH_PROXY)
    scanner.scan(frame)
    return frame, where, scanner.report()


def test_every_plant_found_with_its_verdict(planted):
    _, _, report = planted
    found: dict[str, set] = {}
    for finding in report["findings"]:
        found.setdefault(finding["fingerprint"], set()).add((finding["kind"], finding["verdict"]))
    for name, plant in PLANTS.items():
        assert found.get(fingerprint(plant.secret)) == {(plant.kind, plant.verdict)}, name
    assert len(found) == len(PLANTS)
    assert report["findings_omitted"] == 0


def test_counts_per_kind(planted):
    frame, where, report = planted
    trials = frame["trial_name"].to_list()
    for kind in {p.kind for p in PLANTS.values()}:
        names = [name for name, p in PLANTS.items() if p.kind == kind]
        rows = {i for name in names for i in where[name]}
        counts = report["kinds"][kind]
        assert counts["matches"] == sum(len(where[name]) for name in names), kind
        assert counts["rows"] == len(rows), kind
        assert counts["trials"] == len({trials[i] for i in rows}), kind
        assert counts["tasks"] == len({trials[i].split("__")[0] for i in rows}), kind
        for verdict in ("live", "unverified", "near_miss", "placeholder"):
            assert counts[verdict] == sum(len(where[n]) for n in names if PLANTS[n].verdict == verdict), (kind, verdict)
    assert report["kinds"]["github_token"] == {
        "patterns": 1,
        "framings": {"raw": 6},
        "matches": 6,
        "rows": 3,
        "trials": 2,
        "tasks": 2,
        "live": 4,
        "unverified": 1,
        "near_miss": 0,
        "placeholder": 1,
    }
    assert report["kinds"]["slack_token"]["rows"] == 1
    assert (report["rows_scanned"], report["verdict"]) == (frame.height, "live")


def test_pem_blocks_are_analysed(planted):
    _, _, report = planted
    pem = report["pem"]
    assert pem["blocks"] == 7
    assert pem["markers"] == 13  # six complete blocks, one BEGIN without END
    assert (pem["parseable"], pem["placeholder"], pem["truncated"]) == (5, 1, 1)
    assert (pem["rows"], pem["tasks"]) == (2, 1)
    assert sorted((b["kind"], b["verdict"]) for b in report["pem_blocks"]) == [
        ("ENCRYPTED", "live"),
        ("OPENSSH", "live"),
        ("PKCS8-RSA", "live"),
        ("PKCS8-RSA", "live"),
        ("PKCS8-RSA", "placeholder"),
        ("RSA", "live"),
        ("RSA", "unverified"),
    ]
    truncated = next(b for b in report["pem_blocks"] if b["truncated"])
    assert truncated["min_bytes"] == 600 and 300 < truncated["decoded_bytes"] < 600
    encrypted = next(b for b in report["pem_blocks"] if b["kind"] == "ENCRYPTED")
    assert encrypted["encrypted"] and encrypted["parseable"]
    assert pem["max_decoded_bytes"] == max(b["decoded_bytes"] for b in report["pem_blocks"]) > 1217


def test_pem_edge_cases():
    bare = analyse_pem_block("-----BEGIN RSA PRIVATE KEY-----")
    assert (bare.truncated, bare.decoded_bytes, bare.verdict) == (True, 0, "placeholder")
    short = analyse_pem_block("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----")
    assert (short.parseable, short.verdict) == (False, "placeholder")
    complete_but_small = analyse_pem_block(
        f"-----BEGIN RSA PRIVATE KEY-----\n{rand(ALNUM, 64)}\n-----END RSA PRIVATE KEY-----"
    )
    assert (complete_but_small.decoded_bytes, complete_but_small.verdict) == (48, "placeholder")
    full_length_garbage = analyse_pem_block(
        f"-----BEGIN RSA PRIVATE KEY-----\n{rand(ALNUM, 1600)}\n-----END RSA PRIVATE KEY-----"
    )
    assert (full_length_garbage.parseable, full_length_garbage.verdict) == (False, "unverified")
    assert analyse_pem_block(RSA_PKCS8.replace("\n", " ")).parseable  # a key flattened onto one line


def test_truncated_blocks_and_stray_markers_do_not_crash():
    openssh_head = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz"
    )
    frame = pl.DataFrame([row("t__1", ["sys", openssh_head]), row("t__2", ["-----END PRIVATE KEY----- dangling"])])
    scanner = SecretScanner("r")
    scanner.scan(frame)
    report = scanner.report()
    assert (report["pem"]["markers"], report["pem"]["blocks"], report["pem"]["truncated"]) == (2, 1, 1)
    assert report["pem_blocks"][0]["verdict"] == "unverified"


def test_a_json_escaped_lone_surrogate_beside_a_token_does_not_crash_the_normalised_view():
    """`\\ud800` unescaped is a lone surrogate, no text for the Rust engine: the view reads it as U+FFFD."""
    token = "ghp_" + rand(ALNUM, 36)
    text = json.dumps({"output": f"bad \\ud800 half\nGITHUB_TOKEN={token}\n"})
    scanner = SecretScanner("r")
    scanner.scan(pl.DataFrame([row("t__1", ["sys", text])]))
    assert scanner.report()["kinds"]["github_token"]["matches"] == 1


def test_batches_accumulate_like_one_scan(planted):
    frame, _, whole = planted
    scanner = SecretScanner("run-1", WITH_PROXY)
    for start in range(0, frame.height, 3):
        scanner.scan(frame.slice(start, 3))
    assert scanner.report() == whole


def test_report_never_holds_a_secret(planted):
    _, _, report = planted
    dumped = json.dumps(report)
    for name, plant in PLANTS.items():
        assert plant.secret not in dumped and plant.secret[:12] not in dumped, name
        for line in plant.secret.replace("\\n", "\n").splitlines():
            assert "-----" in line or len(line) < 12 or line not in dumped, name


def test_redaction_replaces_live_and_unverified_only(planted):
    frame, _, report = planted
    redacted, counts = redact(frame, WITH_PROXY)
    assert redacted.schema == frame.schema
    text = json.dumps(redacted.to_dicts())
    for name, plant in PLANTS.items():
        assert (json.dumps(plant.secret)[1:-1] in text) == (plant.verdict in ("placeholder", "near_miss")), name
    assert counts == {k: v["live"] + v["unverified"] for k, v in report["kinds"].items() if v["live"] + v["unverified"]}
    for kind, count in counts.items():
        assert text.count(f"[REDACTED:{kind}]") == count, kind
    assert "commit 3f786850e387550fdab836ed7e6dc881de23001b" in text
    assert text.count("root@sandbox") == json.dumps(frame.to_dicts()).count("root@sandbox")
    rescan = SecretScanner("run-1", WITH_PROXY)
    rescan.scan(redacted)
    assert rescan.report()["verdict"] == "near_misses"  # kept, beside the placeholders: nothing acted on


def test_redact_without_secrets_returns_rows_unchanged():
    frame = pl.DataFrame([row("t__1", ["hello", "world"])])
    redacted, counts = redact(frame)
    assert counts == {} and redacted.equals(frame)


def test_allowlisted_fingerprint_is_placeholder(planted):
    frame, _, _ = planted
    live = [fingerprint(p.secret) for p in PLANTS.values() if p.verdict == "live"]
    scanner = SecretScanner("run-1", ScanOptions((PROXY_KEY,), tuple(live)))
    scanner.scan(frame)
    report = scanner.report()
    assert report["verdict"] == "unverified" and report["unverified"] > 0
    assert sum(v["live"] for v in report["kinds"].values()) == 0
    redacted, _ = redact(frame, ScanOptions((PROXY_KEY,), tuple(live)))
    assert PLANTS["github"].secret in json.dumps(redacted.to_dicts())
    with pytest.raises(ValueError):
        SecretScanner("r", ScanOptions(allowlist=("not-hex",)))


def test_custom_pattern_reported_under_its_name(planted):
    frame, _, report = planted
    assert report["kinds"]["internal_proxy_key"] == {
        "patterns": 1,
        "framings": {"raw": 1},
        "matches": 1,
        "rows": 1,
        "trials": 1,
        "tasks": 1,
        "live": 1,
        "unverified": 0,
        "near_miss": 0,
        "placeholder": 0,
    }
    builtin_only = SecretScanner("r")
    builtin_only.scan(frame)
    assert "internal_proxy_key" not in builtin_only.report()["kinds"]


def test_parse_pattern_specs():
    assert parse_pattern_specs("") == []
    assert parse_pattern_specs(r"internal_proxy_key=pxk_[0-9a-f]{32}; build_token=bt-[A-Z]{8}") == [
        PROXY_KEY,
        custom_kind("build_token", "bt-[A-Z]{8}"),
    ]
    assert parse_pattern_specs(json.dumps({"semi": "a;b=[0-9]{4}"})) == [custom_kind("semi", "a;b=[0-9]{4}")]
    assert parse_pattern_specs(json.dumps([{"name": "x_key", "regex": "xk_[a-z]{9}"}])) == [
        custom_kind("x_key", "xk_[a-z]{9}")
    ]
    for bad in ("no_equals_sign", "Bad-Name=abc", "k=a(", "empty=x*"):
        with pytest.raises(ValueError):
            parse_pattern_specs(bad)
    with pytest.raises(ValueError):
        ScanOptions((custom_kind("jwt", "abc"),))


def test_capture_group_is_the_secret():
    pattern = custom_kind("db_password", r"DB_PASSWORD=(\S{12,})")
    frame = pl.DataFrame([row("t__1", ["sys", "export DB_PASSWORD=Zq8vL2mN4pR7tY1w && ./run"])])
    scanner = SecretScanner("r", ScanOptions((pattern,)))
    scanner.scan(frame)
    assert scanner.report()["findings"][0]["fingerprint"] == fingerprint("Zq8vL2mN4pR7tY1w")
    redacted, counts = redact(frame, ScanOptions((pattern,)))
    assert counts == {"db_password": 1}
    assert "export DB_PASSWORD=[REDACTED:db_password] && ./run" in redacted["conversations"][0][1]["content"]


def test_overall_verdict_order():
    def kinds(**verdicts: int) -> dict:
        counts = {"live": 0, "unverified": 0, "placeholder": 0, **verdicts}
        return {"k": {**counts, "matches": sum(counts.values())}}

    assert overall_verdict(kinds()) == "clean"
    assert overall_verdict(kinds(placeholder=2)) == "placeholders_only"
    assert overall_verdict(kinds(near_miss=1)) == "near_misses"  # kept as read: no placeholder
    assert overall_verdict(kinds(near_miss=1, placeholder=2)) == "near_misses"
    assert overall_verdict(kinds(near_miss=1, unverified=1)) == "unverified"
    assert overall_verdict(kinds(placeholder=2, unverified=1)) == "unverified"  # nothing verifiably live
    assert overall_verdict(kinds(unverified=1, live=1)) == "live"


def test_ordinary_text_is_clean():
    noise = terminal(
        "commit 3f786850e387550fdab836ed7e6dc881de23001b  sha256:" + "ab" * 32,
        "pip install scikit-learn; task-runner --disk-usage; ask-user-1234567890abcdefghijklmnopqrstuvwxyz",
        "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 4).decode(),
        "grep -rn 'BEGIN RSA PRIVATE KEY' src/  # nothing found",
    )
    scanner = SecretScanner("r")
    scanner.scan(pl.DataFrame([row("t__1", ["sys", noise], instruction="Fix the tests.", verifier="1 passed")]))
    report = scanner.report()
    assert (report["verdict"], report["findings"], report["pem"]["markers"]) == ("clean", [], 0)


# ---------------------------------------------------------------- the project's real data

# The sample's plants as they show up in its exported rows. The github_token, aws_access_key_id and
# hf_token plants sit in the observation after each trial's last agent step, which a last-episode
# row does not include (see test_sample_traces_final_observations).
SAMPLE_ROW_FINDINGS = {
    # bare lines of a file listing, no credential word before them: near misses with generated bodies,
    # so `unverified` and redacted by default (`--on-near-miss keep` keeps them)
    "jwt": ("jwt", "unverified"),  # the header decodes, the payload is random bytes rather than JSON
    "openai_key": ("openai_api_key", "unverified"),  # sk-proj- shape, without OpenAI's T3BlbkFJ marker
    "pem_placeholder": ("private_key", "placeholder"),  # `MIIEvQ...` then a `...` line
}


def test_sample_rows_give_no_false_live():
    scanner = SecretScanner(TRUTH["run_id"])
    scanner.scan(pl.read_ndjson(SAMPLE_ROWS))
    report = scanner.report()
    expected = {
        (t["trial_name"], *SAMPLE_ROW_FINDINGS[t["secret"]])
        for t in TRUTH["trials"]
        if t["secret"] in SAMPLE_ROW_FINDINGS
    }
    assert {(f["trial_name"], f["kind"], f["verdict"]) for f in report["findings"]} == expected
    assert all(v["live"] == 0 for v in report["kinds"].values())
    assert report["verdict"] == "unverified"  # the near misses with generated bodies
    assert report["pem"] == {
        "markers": 6,
        "rows": 3,
        "tasks": 3,
        "blocks": 3,
        "truncated": 0,
        "parseable": 0,
        "placeholder": 3,
        "max_decoded_bytes": 39,
    }
    assert {(b["kind"], b["verdict"], b["min_bytes"]) for b in report["pem_blocks"]} == {
        ("PKCS8-RSA", "placeholder", 630)
    }


def trajectory_rows(path: Path, trial_name: str) -> pl.DataFrame:
    """Every text of an ATIF trajectory in one row: step messages and observation contents."""
    texts = []
    for step in json.loads(path.read_text())["steps"]:
        if isinstance(step.get("message"), str):
            texts.append(step["message"])
        for result in (step.get("observation") or {}).get("results") or []:
            if isinstance(result.get("content"), str):
                texts.append(result["content"])
    return pl.DataFrame([row(trial_name, texts)])


def test_sample_traces_final_observations():
    """The three plants absent from the rows are in the trajectories, and found there.

    All three have random bodies: the AWS key id (base32) and the HF token (34 letters) are
    well-shaped, so `live`; the GitHub token's last six characters are not its CRC32 and no credential
    word precedes it: a near miss with a generated body, so `unverified`.
    """
    expected = {"github_token": "unverified", "aws_access_key_id": "live", "hf_token": "live"}
    for trial in (t for t in TRUTH["trials"] if t["secret"] in expected):
        scanner = SecretScanner(TRUTH["run_id"])
        path = SAMPLE_TRACES / trial["trial_name"] / "agent" / "trajectory.json"
        scanner.scan(trajectory_rows(path, trial["trial_name"]))
        assert {(f["kind"], f["verdict"]) for f in scanner.report()["findings"]} == {
            (trial["secret"], expected[trial["secret"]])
        }


@pytest.mark.parametrize("path", sorted((DATA / "harbor_golden").glob("*.json")), ids=lambda p: p.name)
def test_golden_trajectories_give_no_live(path):
    scanner = SecretScanner("golden")
    scanner.scan(trajectory_rows(path, path.name))
    report = scanner.report()
    assert report["rows_scanned"] == 1 and report["bytes_scanned"] > 0
    assert all(v["live"] == 0 for v in report["kinds"].values())


def test_builtin_kinds_have_unique_names_and_literals():
    names = [kind.name for kind in BUILTIN_KINDS]
    assert len(names) == len(set(names)) and {"jwt", "private_key", "pgp_private_key", "generic_password"} <= set(names)
    assert all(rule.literals for kind in BUILTIN_KINDS for rule in kind.rules)  # every built-in rule is prefiltered
