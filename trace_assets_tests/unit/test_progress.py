"""The progress reporter's figures, throttling and terminal bar, on an injected clock."""

from __future__ import annotations

import io
import time

from trace_assets.publishing.targets import replace_folder
from trace_assets.runtime.ahead import mapped_ahead, produced_ahead, threads_for
from trace_assets.runtime.progress import BYTES, FileTransfer, HeldLines, ProgressReporter, bytes_text, duration_text


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_figures_give_done_total_rate_and_eta():
    clock, lines = Clock(), []
    reporter = ProgressReporter("scored_trials", "trials", 300, lines.append, clock=clock)
    clock.now += 2
    reporter.advance(100, "3 unchanged")
    assert reporter.line() == "100/300 trials (33%), 50 trials/s, ETA 0:04; 3 unchanged"
    clock.now += 4
    reporter.advance(200)
    reporter.finish()
    assert lines[-1] == "300/300 trials (100%), 50 trials/s, took 0:06"


def test_a_quick_steps_lines_go_out_as_one_message_at_its_end():
    clock, messages = Clock(), []
    lines = HeldLines(messages.append, clock=clock, hold_for=5)
    reporter = ProgressReporter("raw_trial_listing", "objects", 6, lines, clock=clock)
    clock.now += 0.5
    reporter.advance(6)
    reporter.finish()
    lines("listed 6 objects in 1 trial folders")
    assert messages == []
    lines.flush()
    lines.flush()  # nothing held: nothing more
    assert messages == ["6/6 objects (100%), 12 objects/s, took 0:00\nlisted 6 objects in 1 trial folders"]


def test_a_long_steps_lines_pass_through_once_its_first_seconds_are_over():
    clock, messages = Clock(), []
    lines = HeldLines(messages.append, clock=clock, hold_for=5)
    lines("rows: done")  # a quick phase's final line, held
    clock.now += 6
    lines("sessions: 10/100")  # past the hold: goes out with what was held
    lines("sessions: 20/100")
    assert messages == ["rows: done\nsessions: 10/100", "sessions: 20/100"]


def test_without_a_total_there_is_no_share_or_eta():
    clock = Clock()
    reporter = ProgressReporter("raw_trial_listing", "objects", None, lambda _: None, clock=clock)
    clock.now += 4
    reporter.advance(2000)
    assert reporter.figures() == "2,000 objects, 500 objects/s"


def test_log_lines_come_every_few_seconds_not_every_batch():
    clock, lines = Clock(), []
    reporter = ProgressReporter("last_episode_rows", "trials", 10_000, lines.append, clock=clock, log_every=5)
    for _ in range(100):  # a batch every 0.2 s for 20 s
        clock.now += 0.2
        reporter.advance(100)
    assert len(lines) == 4
    assert lines[0].startswith("2,500/10,000 trials (25%), 500 trials/s, ETA 0:15")


def test_the_bar_is_redrawn_in_place_and_cleared_for_log_lines():
    clock, lines, bar = Clock(), [], io.StringIO()
    reporter = ProgressReporter("secret_scan_report", "rows", 40, lines.append, bar=bar, clock=clock, log_every=5)
    clock.now += 1
    reporter.advance(10)
    assert (
        bar.getvalue() == "\rsecret_scan_report [######..................] 10/40 rows (25%), 10 rows/s, ETA 0:03\x1b[K"
    )
    clock.now += 0.1
    reporter.advance(1)  # within the redraw interval: nothing drawn
    assert bar.getvalue().count("\r") == 1
    reporter.finish()
    assert bar.getvalue().endswith("\r\x1b[K") and lines == ["11/40 rows (28%), 10.0 rows/s, ETA 0:03"]


def test_bytes_read_as_sizes():
    assert [bytes_text(n) for n in (0, 512, 1536, 3 * 2**20 + 2**19, 5 * 2**30)] == [
        "0 B", "512 B", "1.5 KiB", "3.5 MiB", "5.0 GiB",
    ]  # fmt: skip
    clock = Clock()
    reporter = ProgressReporter("upload", BYTES, 10 * 2**20, lambda _: None, clock=clock)
    clock.now += 2
    reporter.advance(4 * 2**20)
    assert reporter.figures() == "4.0 MiB/10.0 MiB (40%), 2.0 MiB/s, ETA 0:03"


def test_a_file_transfer_counts_bytes_and_files():
    clock, lines = Clock(), []
    transfer = FileTransfer("upload", [2**20, 2**20, 2 * 2**20], lines.append, clock=clock, log_every=5)
    clock.now += 1
    transfer.advance(2, 2 * 2**20)
    clock.now += 5
    transfer.advance(1, 2 * 2**20)  # past log_every: a line
    transfer.finish()
    assert lines == [
        "4.0 MiB/4.0 MiB (100%), 682.7 KiB/s, took 0:06; 3/3 files",
        "4.0 MiB/4.0 MiB (100%), 682.7 KiB/s, took 0:06; 3/3 files",
    ]


def test_a_folder_publish_reports_what_it_copies(tmp_path):
    source = tmp_path / "build"
    (source / "data" / "v1").mkdir(parents=True)
    (source / "data" / "v1" / "train-00000-of-00001.parquet").write_bytes(
        b"p" * 3066
    )  # 3,072 bytes with the card and coverage
    (source / "README.md").write_text("card")
    (source / "coverage.json").write_text("{}")
    lines: list[str] = []
    replace_folder(source, str(tmp_path / "published"), progress=lines.append)
    assert len(lines) == 1 and lines[0].startswith("3.0 KiB/3.0 KiB (100%), ")
    assert lines[0].endswith("; 3/3 files")
    lines.clear()
    replace_folder(source, str(tmp_path / "published"), progress=lines.append)  # the shard is there already
    assert lines[0].startswith("6 B/6 B (100%), ") and lines[0].endswith("; 2/2 files")


def test_durations_read_as_clock_times():
    assert [duration_text(s) for s in (0, 59.6, 61, 3725)] == ["0:00", "1:00", "1:01", "1:02:05"]


def test_mapped_ahead_keeps_order_and_holds_at_most_ahead_plus_one_batches():
    started, finished = [], []

    def fetch(batch: int) -> int:
        started.append(batch)
        return batch * 10

    seen = []
    for batch, fetched in mapped_ahead(range(6), fetch, ahead=1):
        assert len(started) <= batch + 2  # this batch's and at most the next one's fetch have begun
        seen.append((batch, fetched))
        finished.append(batch)
    assert seen == [(b, b * 10) for b in range(6)]
    assert list(mapped_ahead(range(3), fetch, ahead=0)) == [(0, 0), (1, 10), (2, 20)]


def test_mapped_ahead_in_several_threads_answers_in_order():
    """Later batches finishing first (the scan's finders run two at a time) still come in order."""

    def work(batch: int) -> int:
        time.sleep(0.02 if batch % 2 == 0 else 0)
        return batch * 10

    assert list(mapped_ahead(range(8), work, ahead=2, workers=2)) == [(b, b * 10) for b in range(8)]


def test_one_batch_worth_is_worked_without_threads():
    """One batch has nothing to overlap with (a one-trial scope's scan spent more CPU handing it to a
    thread than finding in it); more than one goes to the workers."""
    assert [threads_for(items, 256, 2) for items in (0, 1, 256, 257)] == [1, 1, 1, 2]


def test_a_failed_fetch_is_raised_at_its_batch():
    def fetch(batch: int) -> int:
        if batch == 2:
            raise OSError("endpoint down")
        return batch

    seen = []
    try:
        for batch, _ in mapped_ahead(range(5), fetch, ahead=2):
            seen.append(batch)
    except OSError as error:
        assert str(error) == "endpoint down"
    assert seen == [0, 1]


def test_produced_ahead_keeps_order_raises_where_it_failed_and_stops_with_its_consumer():
    assert list(produced_ahead(iter(range(50)), ahead=2)) == list(range(50))

    def failing():
        yield 1
        raise OSError("listing failed")

    seen = []
    try:
        for item in produced_ahead(failing(), ahead=2):
            seen.append(item)
    except OSError as error:
        assert str(error) == "listing failed"
    assert seen == [1]

    produced = []

    def endless():
        for n in range(10**9):
            produced.append(n)
            yield n

    stream = produced_ahead(endless(), ahead=2)
    assert [next(stream) for _ in range(3)] == [0, 1, 2]
    stream.close()  # the worker stops: it produced at most `ahead` + 2 past what was taken
    assert len(produced) <= 3 + 2 + 2
