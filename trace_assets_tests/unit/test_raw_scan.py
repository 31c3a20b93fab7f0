"""The raw-tree scan: every object under a scope's prefix, streamed in chunks, never following links."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import shutil
from pathlib import Path
from re import _constants as re_constants
from re import _parser as re_parser

import fsspec
import pytest

from trace_assets.core.scope import RunScope
from trace_assets.secret_scan.kinds import BUILTIN_KINDS
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps.raw_scan import MARGIN_CHARS, RawTreeScan, raw_scan
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES, link_tree
from trace_assets_tests.support.secret_framings import PROMPT, crc_token, ec_pem, rsa_pem

TRIAL = "stack-bash-1318__pZPPTdh"
CHUNK, OVERLAP = 4096, 1024


@pytest.fixture(scope="session")
def sample_copy(tmp_path_factory) -> Path:
    """The sample, copied once a session: each test's `traces` links to this copy, never to the sample."""
    copy = tmp_path_factory.mktemp("raw_scan_sample") / SAMPLE_RUN
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, copy)
    return copy


@pytest.fixture
def traces(tmp_path, sample_copy) -> Path:
    """The sample for one test, hard-linked (a copy each was a third of this file's time)."""
    link_tree(sample_copy, tmp_path / SAMPLE_RUN)
    return tmp_path


@pytest.fixture(scope="module")
def sample_not_utf8(sample_copy: Path) -> int:
    """How many of the sample's objects are not UTF-8 (a few trial logs), scanned once a module."""
    return int(_scan(sample_copy.parent)["objects_not_utf8"])


def _trial_file(traces: Path, key: str) -> Path:
    """A file to write under the run: an existing one made the test's own first, so the write
    cannot reach the session's copy through the link."""
    path = traces / SAMPLE_RUN / "trace_jobs" / key
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file():
        own = path.with_name(f"{path.name}.own")
        shutil.copy2(path, own)
        own.replace(path)
    return path


def _scan(traces: Path) -> dict:
    return RawTreeScan(TraceStore(str(traces)), RunScope(SAMPLE_RUN), ScanOptions(), CHUNK, OVERLAP).run()


def _found(report: dict, key: str) -> dict[str, dict[str, int]]:
    return next((entry["kinds"] for entry in report["objects"] if entry["object"] == key), {})


def test_secret_in_an_episode_prompt_is_found_by_object(traces):
    token = crc_token(random.Random(1), "ghp_")
    key = f"{TRIAL}/agent/episode-4/prompt.txt"
    prompt = _trial_file(traces, key)
    prompt.write_text(prompt.read_text() + f"\n{PROMPT}cat .env\nGITHUB_TOKEN={token}\n")

    report = raw_scan(TraceStore(str(traces)), RunScope(SAMPLE_RUN), ScanOptions())
    [finding] = [f for f in report["findings"] if f["object"] == key]
    assert (finding["kind"], finding["verdict"], finding["trial_name"]) == ("github_token", "live", TRIAL)
    assert _found(report, key) == {"github_token": {"live": 1}}
    assert report["objects_scanned"] == report["objects_listed"] > 1000 and report["skipped"] == {}
    assert report["bytes_scanned"] == sum(p.stat().st_size for p in (traces / SAMPLE_RUN).rglob("*") if p.is_file())
    text = json.dumps(report)
    assert token[4:20] not in text  # fingerprints and a short preview only


def test_secrets_across_and_inside_a_chunk_overlap_are_found_once(traces):
    rng = random.Random(2)
    across, inside = crc_token(rng, "ghp_"), crc_token(rng, "ghp_")
    pem = rsa_pem()
    filler = "".join(rng.choice("abcdefgh \n") for _ in range(5 * CHUNK))
    # `across` straddles the first chunk boundary; `inside` ends 300 characters before the second,
    # so both chunks hold it whole; the PEM block straddles the third.
    text = (
        filler[: CHUNK - 20]
        + f" {across} "
        + filler[: CHUNK - 360 - len(across)]
        + f" {inside} "
        + filler[:300]
        + filler[: CHUNK - 200]
        + f"\n{pem}\n"
        + filler
    )
    key = f"{TRIAL}/agent/episode-4/debug.log"
    _trial_file(traces, key).write_text(text)
    report = _scan(traces)
    assert _found(report, key) == {"github_token": {"live": 2}, "private_key": {"live": 1}}
    assert report["chunks_scanned"] >= report["objects_scanned"] + len(text) // CHUNK


def test_a_character_split_by_a_chunk_boundary_is_not_damage(traces, sample_not_utf8):
    before = sample_not_utf8
    key = f"{TRIAL}/agent/notes.txt"
    _trial_file(traces, key).write_text("a" + "é" * CHUNK)  # two bytes each: boundaries fall inside characters
    assert _scan(traces)["objects_not_utf8"] == before


def test_binary_and_undecodable_objects_have_named_reasons(traces, sample_not_utf8):
    rng = random.Random(3)
    in_binary, in_latin1 = crc_token(rng, "ghp_"), crc_token(rng, "ghp_")
    before = sample_not_utf8
    _trial_file(traces, f"{TRIAL}/agent/core.bin").write_bytes(b"\x7fELF\0\0\0" + in_binary.encode())
    _trial_file(traces, f"{TRIAL}/agent/latin1.txt").write_bytes(b"caf\xe9 token=" + in_latin1.encode() + b"\n")
    report = _scan(traces)
    assert report["skipped"] == {"binary": 1}
    assert report["skipped_objects"] == [{"object": f"{TRIAL}/agent/core.bin", "reason": "binary"}]
    assert _found(report, f"{TRIAL}/agent/latin1.txt") == {"github_token": {"live": 1}}
    assert report["objects_not_utf8"] == before + 1


def _fingerprints(report: dict) -> set[str]:
    return {finding["fingerprint"] for finding in report["findings"]}


def _fingerprint(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()[:16]


def test_links_and_fifos_are_never_read(traces, tmp_path):
    outside = tmp_path / "outside.txt"
    token = crc_token(random.Random(4), "ghp_")
    outside.write_text(f"GITHUB_TOKEN={token}\n")
    os.symlink(outside, _trial_file(traces, f"{TRIAL}/agent/linked.txt"))
    os.mkfifo(_trial_file(traces, f"{TRIAL}/agent/pipe"))
    report = _scan(traces)
    assert report["skipped"] == {"link": 1, "special": 1}
    assert _fingerprint(token) not in _fingerprints(report)


def test_a_file_swapped_for_a_link_after_the_listing_is_refused(traces, tmp_path):
    outside = tmp_path / "outside.txt"
    token = crc_token(random.Random(5), "ghp_")
    outside.write_text(f"GITHUB_TOKEN={token}\n")
    swapped = _trial_file(traces, f"{TRIAL}/agent/swapped.txt")
    swapped.write_text("harmless\n")
    store = TraceStore(str(traces))
    listed = store.iter_run

    def swap_after_listing(scope):
        yield from listed(scope)
        swapped.unlink()
        os.symlink(outside, swapped)

    store.iter_run = swap_after_listing  # type: ignore[method-assign]
    report = RawTreeScan(store, RunScope(SAMPLE_RUN), ScanOptions(), CHUNK, OVERLAP, batch_bytes=2**40).run()
    assert {"object": f"{TRIAL}/agent/swapped.txt", "reason": "link"} in report["skipped_objects"]
    assert _fingerprint(token) not in _fingerprints(report)


def _lone_run(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    """A traces root whose run holds only `files` (keys under trace_jobs/)."""
    for key, content in files.items():
        path = tmp_path / "lone" / SAMPLE_RUN / "trace_jobs" / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return tmp_path / "lone"


def _scan_with(root: Path, chunk: int = CHUNK, overlap: int = OVERLAP, store: TraceStore | None = None) -> dict:
    return RawTreeScan(store or TraceStore(str(root)), RunScope(SAMPLE_RUN), ScanOptions(), chunk, overlap).run()


def test_an_object_of_exactly_n_chunks_is_read_in_n_chunks(tmp_path):
    token = crc_token(random.Random(6), "ghp_")
    tail = f" {token}\n"
    root = _lone_run(tmp_path, {f"{TRIAL}/agent/big.log": "a " * ((3 * CHUNK - len(tail)) // 2) + tail})
    assert (root / SAMPLE_RUN / "trace_jobs" / TRIAL / "agent" / "big.log").stat().st_size == 3 * CHUNK
    report = _scan_with(root)
    assert (report["chunks_scanned"], report["bytes_scanned"]) == (3, 3 * CHUNK)
    assert _found(report, f"{TRIAL}/agent/big.log") == {"github_token": {"live": 1}}


def test_objects_deleted_after_the_listing_are_skipped_as_unreadable(tmp_path):
    small, large = f"{TRIAL}/agent/small.txt", f"{TRIAL}/agent/large.log"
    root = _lone_run(tmp_path, {small: "hello\n", large: "b " * CHUNK, f"{TRIAL}/agent/kept.txt": "kept\n"})
    store = TraceStore(str(root))
    listed = store.iter_run

    def delete_after_listing(scope):
        for page in listed(scope):
            for key in {small, large} & set(page.keys):
                (root / SAMPLE_RUN / "trace_jobs" / key).unlink()
            yield page

    store.iter_run = delete_after_listing  # type: ignore[method-assign]
    report = _scan_with(root, store=store)
    assert report["skipped"] == {"unreadable": 2} and report["objects_scanned"] == 1


def test_an_object_refused_part_way_is_named_partially_scanned(tmp_path, traces):
    token = crc_token(random.Random(7), "ghp_")
    key = f"{TRIAL}/agent/swapped.log"
    root = _lone_run(tmp_path, {key: f"{token}\n" + "c " * (2 * CHUNK)})
    path = root / SAMPLE_RUN / "trace_jobs" / key
    store = TraceStore(str(root))
    read_range = store.fetch_range

    def swap_after_first_chunk(scope, key, start, length):
        data = read_range(scope, key, start, length)
        path.unlink()
        os.symlink(traces / SAMPLE_RUN, path)
        return data

    store.fetch_range = swap_after_first_chunk  # type: ignore[method-assign]
    report = _scan_with(root, store=store)
    assert report["skipped"] == {} and report["partially_scanned"] == {"link": 1}
    assert report["partially_scanned_objects"] == [{"object": key, "reason": "link", "bytes_scanned": CHUNK}]
    assert _found(report, key) == {"github_token": {"live": 1}}  # what its first chunk held, named so


def test_text_that_turns_binary_is_read_no_further(tmp_path):
    """A sparse hole after some text (`truncate -s`): scanned up to the hole (a secret right before
    it found) and not read to its listed size; a stray NUL byte further on does not stop it."""
    token = crc_token(random.Random(9), "ghp_")
    key = f"{TRIAL}/agent/sparse.log"
    text = "d " * (CHUNK - 100) + "\0" + f" {token}\n"  # its token in the second chunk, before the hole
    root = _lone_run(tmp_path, {key: text})
    path = root / SAMPLE_RUN / "trace_jobs" / key
    os.truncate(path, 100 * CHUNK)
    report = _scan_with(root)
    assert report["partially_scanned"] == {"binary": 1} and report["chunks_scanned"] == 2
    assert report["partially_scanned_objects"] == [{"object": key, "reason": "binary", "bytes_scanned": 2 * CHUNK}]
    assert _found(report, key) == {"github_token": {"live": 1}}


def test_a_key_block_whose_chunks_are_scanned_in_two_batches_is_one_object(tmp_path):
    """Its BEGIN marker counts in the first chunk, its END in the second: each batch saw the object."""
    key = f"{TRIAL}/agent/key.log"
    pem = ec_pem()  # shorter than the overlap, as every key is than the real one
    counted_first = CHUNK - OVERLAP  # where the first chunk's counted part ends
    assert 100 < len(pem) < OVERLAP - 100
    root = _lone_run(tmp_path, {key: "d " * ((counted_first - 100) // 2) + f"\n{pem}\n" + "e " * CHUNK})
    store = TraceStore(str(root))
    whole = _scan_with(root, 2**20)
    batched = RawTreeScan(store, RunScope(SAMPLE_RUN), ScanOptions(), CHUNK, OVERLAP, batch_bytes=1).run()
    assert batched["chunks_scanned"] > 2 and whole["pem"]["markers"] == 2
    assert batched["pem"] == whole["pem"] and batched["pem"]["rows"] == 1
    assert _found(batched, key) == {"private_key": {"live": 1}}


SWEEP_CHUNK, SWEEP_OVERLAP = 32768, 400  # twice the margin; the first text's counted part ends at 32,368
SWEEP_LIMIT = SWEEP_CHUNK - SWEEP_OVERLAP


def _sweep_cases() -> dict[str, tuple[str, int]]:
    """Each case's text and how many characters of context come before its value."""
    rng = random.Random(8)
    gap = "\n" + " " * 127  # the longest whitespace run a context may hold
    netrc_key = "".join(rng.choice("0123456789abcdef") for _ in range(40))
    netrc = f"machine{gap}api.wandb.ai{gap}login{gap}{'u' * 128}{gap}password{gap}"  # the longest netrc context
    vercel = "vercel_token = "
    # the same with tabs, in a JSON string escaped twice (an agent writing a config file through a
    # heredoc): 2,080 characters of the file before the value, 800 as the regex sees them
    tabbed = netrc.replace(" ", "\t")
    escaped = json.dumps(json.dumps(tabbed)[1:-1])[1:-1]
    return {
        "keyword": (vercel + "".join(rng.choice("ABCDEFGHJKmnpqrstuvw23456789") for _ in range(24)), len(vercel)),
        "longest_context": (netrc + netrc_key, len(netrc)),
        "escaped_context": (escaped + netrc_key, len(escaped)),
        "letter_before_token": ("x" + crc_token(rng, "ghp_"), 0),
        "token": (crc_token(rng, "ghp_"), 0),
        "pem": (ec_pem(), 0),
    }


def _sweep_starts(sweep: str, secret: str, context: int) -> list[int]:
    """Where the value starts. `dense`: every offset near the counted part's end, every 4th near
    the first chunk's end. `boundaries`: a third of that, every 10th offset near each end, and at each
    end the value, and the match with its context, ending or starting one character before, at and
    after it, and straddling it."""
    if sweep == "dense":
        return [*range(SWEEP_LIMIT - 40, SWEEP_LIMIT + 40), *range(SWEEP_CHUNK - 40, SWEEP_CHUNK + 40, 4)]
    length = len(secret)
    shifts = {-length - 1, -length, -length + 1, -length // 2, -1, 0, 1, context - 1, context, context + 1}
    shifts |= set(range(-40, 40, 10))
    return sorted({boundary + shift for boundary in (SWEEP_LIMIT, SWEEP_CHUNK) for shift in shifts})


def _per_object(report: dict, key: str) -> list:
    """What a report says of one object: its entry (kinds, verdicts, fingerprints) and its findings."""
    entry = next((entry for entry in report["objects"] if entry["object"] == key), None)
    return [entry, [finding for finding in report["findings"] if finding["object"] == key]]


@pytest.mark.parametrize("sweep", ["boundaries", pytest.param("dense", marks=pytest.mark.slow)])
@pytest.mark.parametrize(
    "case", ["keyword", "longest_context", "escaped_context", "letter_before_token", "token", "pem"]
)
def test_a_secret_anywhere_around_a_chunk_boundary_scans_as_in_the_whole_text(tmp_path, case, sweep):
    """One object a start, all of a case's in one scan each way (an object's chunks are its own:
    a scan a start was 400 scans): each object's entry and findings compare, and the totals. A
    PEM's marker counts are totals only, so its starts are scanned one at a time."""
    secret, context = _sweep_cases()[case]
    filler = "lorem ipsum dolor sit amet\n" * (SWEEP_CHUNK // 10)
    # `start` is where the value starts: its context lies before it, in the previous chunk's part or not
    starts = _sweep_starts(sweep, secret, context)
    texts = {}
    for start in starts:
        text = filler[: start - context - 1] + " " + secret + " " + filler
        assert text.index(secret) + context == start
        texts[start] = text
    key = f"{TRIAL}/agent/swept.log"
    groups = [[start] for start in starts] if case == "pem" else [starts]
    differences = []
    for group in groups:
        keys = {start: key if len(group) == 1 else f"{TRIAL}/agent/swept-{start}.log" for start in group}
        root = _lone_run(tmp_path / str(group[0]), {keys[start]: texts[start] for start in group})
        whole, chunked = _scan_with(root, 2**20), _scan_with(root, SWEEP_CHUNK, SWEEP_OVERLAP)
        totals = ("kinds", "pem", "findings_omitted")
        if [chunked[f] for f in totals] != [whole[f] for f in totals]:
            differences.append(group)
        differences += [
            start for start in group if _per_object(chunked, keys[start]) != _per_object(whole, keys[start])
        ]
        if case in ("longest_context", "escaped_context"):
            assert all(_found(whole, keys[start]) == {"wandb_api_key": {"live": 1}} for start in group)
    assert differences == []


def _context_width(regex: str) -> int:
    """The most characters a match of `regex` can hold before its secret: group 1, or the whole match.
    A secret group nested inside another group is not measured here: unbounded, so the test names it."""
    pattern = re_parser.parse(regex.replace("(?-u:", "(?:"))  # Rust's ASCII-only groups, as Python reads them
    items = list(pattern)
    for index, (op, argument) in enumerate(items):
        if op is re_constants.SUBPATTERN and argument[0] == 1:
            return int(re_parser.SubPattern(pattern.state, items[:index]).getwidth()[1])
    return re_constants.MAXREPEAT if pattern.state.groups > 1 else 0


def test_every_kind_s_context_fits_in_the_raw_scan_s_margin():
    """A chunk's text starts MARGIN_CHARS before its counted part: a value starting there is found
    with its keyword only if no context is longer (and one character more, for `\\b` or `^` before it)."""
    assert _context_width(r"login\s+(x)") >= re_constants.MAXREPEAT  # what the bound catches
    assert _context_width(r"(?:a|(b))c") >= re_constants.MAXREPEAT
    widths = {kind.name: max(_context_width(rule.regex) for rule in kind.rules) for kind in BUILTIN_KINDS}
    most_escaped = 11  # file characters for one the regex sees, JSON escaped twice: `\\u005cu0041` is `A`
    assert {name: width for name, width in widths.items() if (width + 1) * most_escaped > MARGIN_CHARS} == {}
    assert widths["wandb_api_key"] == 800  # the netrc rule: the longest context today


def test_an_object_the_store_refuses_as_an_invalid_request_is_skipped_not_read_as_empty():
    """s3fs raises EINVAL for S3's 416 and for other refusals (an SSE-C object): only an object now
    shorter than the read's start is empty; this one is refused, named so."""
    token = crc_token(random.Random(11), "ghp_")
    fs = fsspec.filesystem("memory")
    root = f"/sse-c-{random.Random().getrandbits(32)}"
    fs.pipe(f"{root}/{SAMPLE_RUN}/trace_jobs/{TRIAL}/agent/big.log", (f"TOKEN={token}\n" + "z " * CHUNK).encode())
    store = TraceStore(f"memory://{root}")
    read = store.fs.cat_file

    def refuse_big_log(path, start=None, end=None, **kwargs):
        if path.endswith("big.log"):
            raise OSError(errno.EINVAL, "InvalidRequest: the object was stored with SSE-C")
        return read(path, start=start, end=end, **kwargs)

    head = store.fs.info

    def refuse_its_head(path, **kwargs):  # S3 refuses an SSE-C object's HEAD too (400)
        if path.endswith("big.log"):
            raise OSError(errno.EINVAL, "Bad Request")
        return head(path, **kwargs)

    store.fs.cat_file = refuse_big_log  # type: ignore[method-assign]
    store.fs.info = refuse_its_head  # type: ignore[method-assign]
    report = _scan_with(Path(root), store=store)
    assert (report["objects_scanned"], report["skipped"]) == (0, {"unreadable": 1})
