"""The privacy scrub: each category found, placeholders kept, operator values always replaced,
`on_private` obeyed, tokens stable within a scope, and no value in any report."""

from __future__ import annotations

import json

import polars as pl
import pytest

from trace_assets.defs.resources import ConfigError, config_from_env
from trace_assets.orchestration.options import scan_options, scan_policy
from trace_assets.secret_scan import privacy
from trace_assets.secret_scan.policy import ScanPolicy
from trace_assets.secret_scan.privacy import (
    PrivacyFinder,
    PrivacyOptions,
    PrivateCategory,
    Tokens,
    operator_literals,
)
from trace_assets.secret_scan.redaction import Redaction
from trace_assets.secret_scan.scanner import ScanOptions, SecretScanner
from trace_assets.steps.scan import Redactor, secret_redactor

PRIVATE = {
    "email": ["alice.smith@acme-corp.com", "ops+alerts@infra.acme.io"],
    "private_ip": ["10.0.3.17", "172.20.1.9", "192.168.1.20", "100.72.4.1"],
    "internal_host": ["ip-10-0-3-17.ec2.internal", "redis-master.prod.svc.cluster.local", "devbox-3.local"],
    "internal_url": ["http://ip-10-0-3-18.ec2.internal:8080/health", "https://10.0.9.2/api/v1"],
    "home_path": ["/home/alice", "/Users/bob.jones"],
}
PLACEHOLDERS = [
    "bob@example.com", "127.0.0.1", "0.0.0.0", "192.0.2.5", "198.51.100.7", "203.0.113.9", "8.8.8.8",
    "169.254.169.254", "host.docker.internal", "metadata.google.internal", "kubernetes.default.svc.cluster.local",
    "/home/user", "/home/ubuntu", "threading.local()", "self.internal", "version 1.10.0.3.99", "root@sandbox:/app#",
]  # fmt: skip
OPERATOR = PrivacyOptions(("acme-rl-traces", "gpu-node-7"), (r"team-[0-9]{4}",))


def _text() -> str:
    lines = [f"seen {value} here" for values in PRIVATE.values() for value in values]
    lines += [f"keep {value} here" for value in PLACEHOLDERS]
    lines += ["s3://acme-rl-traces/x exported on gpu-node-7 by team-1234"]
    return "\n".join(lines)


def _frame() -> pl.DataFrame:
    conversation = [
        {"role": "user", "content": _text()},
        {"role": "assistant", "content": "mail alice.smith@acme-corp.com"},
    ]
    return pl.DataFrame([{"conversations": conversation, "trial_name": "t__1", "instruction": "Fix /home/alice/x.py"}])


def test_every_category_found_and_placeholders_kept():
    found = [(str(m.category), m.value, m.placeholder) for m in PrivacyFinder(OPERATOR).matches(_text())]
    for category, values in PRIVATE.items():
        for value in values:
            assert (category, value, False) in found, value
    assert {value for _, value, placeholder in found if not placeholder} == {
        *(v for values in PRIVATE.values() for v in values),
        "acme-rl-traces",
        "gpu-node-7",
        "team-1234",
    }


def test_an_address_with_other_scripts_digits_is_no_address_and_no_crash():
    """Unicode digits (`٠`, Arabic-Indic zero) make no IPv4 address: a value or a URL holding one is not
    read as one (`ipaddress` refuses it), and the ASCII ones beside it are still found."""
    text = "connected to 10.\u0660.0.1:6379, http://10.0.\u0663.4:80/x and 10.0.3.17"
    found = [(str(m.category), m.value) for m in PrivacyFinder().matches(text)]
    assert found == [("private_ip", "10.0.3.17")]


def _report(options: ScanOptions) -> dict:
    scanner = SecretScanner("r", options)
    scanner.scan(_frame())
    return scanner.report()


def test_report_counts_per_category_and_holds_no_value():
    report = _report(ScanOptions(privacy=OPERATOR))
    categories = report["privacy"]["categories"]
    assert categories["email"]["values"] == 2 and categories["email"]["matches"] == 4  # placeholder, repeat
    assert categories["home_path"]["rows"] == 1 and categories["home_path"]["columns"] == {
        "conversations": 2,
        "instruction": 1,
    }
    assert categories["operator"]["matches"] == 3
    dumped = json.dumps(report)
    for value in [v for values in PRIVATE.values() for v in values] + ["acme-rl-traces", "gpu-node-7", "team-1234"]:
        assert value not in dumped, value
    assert "privacy" not in _report(ScanOptions())  # off unless asked: published bytes unchanged


@pytest.mark.parametrize("on_private", ["keep", "redact", "block"])
def test_policy_operator_always_replaced_the_rest_per_on_private(on_private):
    options = ScanOptions(privacy=OPERATOR)
    policy = ScanPolicy("block", "redact", on_private)
    report = _report(options)
    assert bool(policy.blocking(report)) == (on_private == "block")
    redactor = secret_redactor(policy, report, options)
    assert redactor is not None  # operator values are always replaced
    rows = redactor(_frame().to_arrow()).to_pylist()[0]
    texts = [m["content"] for m in rows["conversations"]] + [rows["instruction"]]
    published = json.dumps(redactor.published_report(report)) + "".join(texts)
    for value in ("acme-rl-traces", "gpu-node-7", "team-1234"):
        assert value not in published
    private = [v for values in PRIVATE.values() for v in values]
    assert all((v in published) == (on_private != "redact") for v in private)
    assert all(v.split(" ")[-1].rstrip("()#") in published for v in PLACEHOLDERS)
    if on_private == "redact":
        assert texts[1] == "mail [EMAIL-1]" and "[HOME-1]/x.py" in texts[2]
        assert redactor.private_counts["email"] == 3


def test_tokens_stable_across_batches_rows_and_sessions():
    options = ScanOptions(privacy=PrivacyOptions())
    redactor = Redactor(options, ScanPolicy(on_private="redact"))
    first = redactor(pl.DataFrame([{"instruction": "a@corp.io then b@corp.io"}]).to_arrow())
    second = redactor(pl.DataFrame([{"instruction": "b@corp.io, c@corp.io, a@corp.io"}]).to_arrow())
    assert first["instruction"][0].as_py() == "[EMAIL-1] then [EMAIL-2]"
    assert second["instruction"][0].as_py() == "[EMAIL-2], [EMAIL-3], [EMAIL-1]"


def test_operator_literals_and_config(monkeypatch):
    assert operator_literals("acme-rl-traces", "team-x/runs/", "gpu-node-7.corp", "root", ["x-y-z"]) == (
        "acme-rl-traces",
        "gpu-node-7",
        "gpu-node-7.corp",
        "team-x/runs",
        "x-y-z",
    )
    assert "alice" in operator_literals(None, "", "localhost", "alice", [])
    env = {"TRACE_ASSETS_ON_PRIVATE": "redact", "TRACE_ASSETS_SCRUB_LITERALS": "acme-lab, bench-9"}
    config = config_from_env(env, ())
    assert scan_policy(config).on_private == "redact"
    assert {"acme-lab", "bench-9"} <= set(scan_options(config).privacy.literals)
    with pytest.raises(ConfigError, match="TRACE_ASSETS_ON_PRIVATE"):
        config_from_env({"TRACE_ASSETS_ON_PRIVATE": "scrub"}, ())
    with pytest.raises(ConfigError):
        config_from_env({"TRACE_ASSETS_SCRUB_LITERALS": "ab"}, ())
    assert set(PrivateCategory) == {PrivateCategory(c) for c in [*PRIVATE, "operator"]}


def test_operator_values_alone_are_those_every_category_finds() -> None:
    """A redaction that keeps every category but `operator` looks for operator values only: the
    same ones, overlapping an e-mail, a host, a URL or a home path or not."""
    texts = [
        _text(),
        "mail gpu-node-7@acme-corp.com, see http://gpu-node-7.ec2.internal:80/x and /home/acme-rl-traces/y",
        "team-1234.local ACME-RL-TRACES nothing private here",
    ]
    frame = pl.DataFrame(
        {"text_id": range(len(texts)), "text": texts}, schema={"text_id": pl.UInt32, "text": pl.String}
    )
    every = [(i, m) for i, m in PrivacyFinder(OPERATOR).find(frame) if m.category is PrivateCategory.OPERATOR]
    assert len(every) >= 6
    assert PrivacyFinder(OPERATOR, {PrivateCategory.OPERATOR}).find(frame) == every
    assert PrivacyFinder(PrivacyOptions(), {PrivateCategory.OPERATOR}).find(frame) == []


def _trial_rows(trials: dict[str, str]) -> pl.DataFrame:
    conversations = [[{"role": "user", "content": f"ssh {text}"}] for text in trials.values()]
    return pl.DataFrame(
        {"conversations": conversations, "trial_name": list(trials), "instruction": ["go"] * len(trials)}
    )


TRIALS = {
    "t__a": "alice@corp.io at 10.0.0.5",
    "t__b": "ALICE@corp.io and bob@corp.io from /home/carol",
    "t__c": "bob@corp.io on 10.0.0.6 and /Users/carol",
    "t__d": "nothing here but bob@example.com",
}


def test_the_scan_numbers_tokens_in_its_order_and_lists_them_per_trial():
    scanner = SecretScanner("r", ScanOptions(privacy=PrivacyOptions()))
    scanner.scan(_trial_rows(TRIALS))
    listed = {e["trial_name"]: e["categories"] for e in scanner.report()["privacy"]["trials"]}
    assert listed == {
        "t__a": {"email": {"values": 1, "tokens": ["[EMAIL-1]"]}, "private_ip": {"values": 1, "tokens": ["[IP-1]"]}},
        "t__b": {"email": {"values": 2, "tokens": ["[EMAIL-1]", "[EMAIL-2]"]}, "home_path": {"values": 1, "tokens": ["[HOME-1]"]}},
        "t__c": {
            "email": {"values": 1, "tokens": ["[EMAIL-2]"]},
            "home_path": {"values": 1, "tokens": ["[HOME-1]"]},  # the user is the value, under /home or /Users
            "private_ip": {"values": 1, "tokens": ["[IP-2]"]},
        },
    }  # fmt: skip
    assert scanner.report()["privacy"]["trials_omitted"] == 0
    # The numbering as recorded for publishing, held by digest: no value in it.
    assigned = scanner.private_tokens
    assert assigned is not None and [len(assigned[c]) for c in ("email", "private_ip", "home_path")] == [2, 2, 1]
    assert not any(v in json.dumps(assigned) for v in ("alice", "bob", "carol", "10.0.0"))


def test_redaction_goes_on_with_the_scans_numbering_however_it_cuts_batches():
    """Publishing one trial at a time, last first, gives each value the scan's token."""
    options = ScanOptions(privacy=PrivacyOptions())
    scanner = SecretScanner("r", options)
    scanner.scan(_trial_rows(TRIALS))

    def published(redaction: Redaction, trial: str) -> str:
        return redaction(_trial_rows({trial: TRIALS[trial]}))[0]["conversations"][0][0]["content"]

    seeded = Redaction(options, (), PrivateCategory, Tokens(scanner.private_tokens))
    assert [published(seeded, trial) for trial in ("t__c", "t__a")] == [
        "ssh [EMAIL-2] on [IP-2] and /Users/[HOME-1]",
        "ssh [EMAIL-1] at [IP-1]",
    ]
    unseeded = Redaction(options, (), PrivateCategory)  # numbered in its own order of meeting them
    assert published(unseeded, "t__c") == "ssh [EMAIL-1] on [IP-1] and /Users/[HOME-1]"


def test_tokens_go_on_after_the_assigned_ones():
    first = Tokens()
    match = PrivacyFinder().matches("a@corp.io b@corp.io")
    assert [first.name(m) for m in match] == ["[EMAIL-1]", "[EMAIL-2]"]
    second = Tokens(first.assigned())
    later = PrivacyFinder().matches("c@corp.io B@CORP.IO")
    assert [second.name(m) for m in later] == ["[EMAIL-3]", "[EMAIL-2]"]


def test_only_the_first_trials_are_listed_and_the_rest_counted(monkeypatch):
    monkeypatch.setattr(privacy, "TRIALS_LISTED", 2)
    monkeypatch.setattr(privacy, "TOKENS_LISTED", 1)
    scanner = SecretScanner("r", ScanOptions(privacy=PrivacyOptions()))
    scanner.scan(_trial_rows(TRIALS))
    report = scanner.report()["privacy"]
    assert [e["trial_name"] for e in report["trials"]] == ["t__a", "t__b"] and report["trials_omitted"] == 1
    assert report["trials"][1]["categories"]["email"] == {"values": 2, "tokens": ["[EMAIL-1]"]}
