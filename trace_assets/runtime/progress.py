"""Progress of a long step: done/total, rate and ETA, as a bar on a terminal and as log lines.

Steps report through `Progress`, a callable taking one line (assets pass `context.log.info`
behind `HeldLines`, the CLI's log goes to stderr). A `ProgressReporter` turns counts into those lines every
`log_every` seconds and once at the end, never once per batch, and, when stderr is a terminal,
redraws a bar there in between. The clock is injected, so the figures are tested without waiting.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

Progress = Callable[[str], None]
Clock = Callable[[], float]

LOG_EVERY_SECONDS = 5.0  # a log line this often at most: readable in Dagster's run log
BAR_EVERY_SECONDS = 0.2  # a terminal redraw this often at most
BAR_WIDTH = 24


def quiet(_: str) -> None:
    """Progress nobody reads (tests, benchmarks)."""


def terminal() -> TextIO | None:
    """stderr when it is a terminal (where a bar can be redrawn in place), else None."""
    return sys.stderr if sys.stderr.isatty() else None


def duration_text(seconds: float) -> str:
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def count_text(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 or value == int(value) else f"{value:.1f}"


def bytes_text(value: float) -> str:
    """`512 B`, `3.4 MiB`, `1.2 GiB`: an upload's bytes as people read them."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale:
            return f"{value / scale:,.1f} {unit}"
    return f"{value:,.0f} B"


BYTES = "bytes"  # the unit whose counts read as sizes (`3.4/10.0 MiB, 1.1 MiB/s`)


class HeldLines:
    """A step's lines for a log where every line costs: Dagster's run log stores each as an event,
    a connection and a commit to its database (about 5 ms of CPU). Lines of the step's first
    `hold_for` seconds are held and go out together, one message of one line each, with the first
    line after that or when the step ends (`flush`); later lines go out as they come. A step of a
    small scope logs once where it logged up to five times; a long one's progress lines, at most one
    every `LOG_EVERY_SECONDS`, pass through."""

    def __init__(self, log: Progress, *, clock: Clock = time.monotonic, hold_for: float = LOG_EVERY_SECONDS) -> None:
        self._log, self._clock = log, clock
        self._until = clock() + hold_for
        self._held: list[str] = []

    def __call__(self, line: str) -> None:
        self._held.append(line)
        if self._clock() >= self._until:
            self.flush()

    def flush(self) -> None:
        if self._held:
            self._log("\n".join(self._held))
            self._held.clear()


class ProgressReporter:
    """Counts one step's work; `total` is None when not known beforehand (then no share or ETA)."""

    def __init__(
        self,
        step: str,
        unit: str,
        total: int | None,
        log: Progress,
        *,
        bar: TextIO | None = None,
        clock: Clock = time.monotonic,
        log_every: float = LOG_EVERY_SECONDS,
    ) -> None:
        self.step, self.unit, self.total = step, unit, total
        self.done = 0
        self.note = ""
        self._log, self._bar, self._clock, self._log_every = log, bar, clock, log_every
        self._started = clock()
        self._logged = self._drawn = self._started

    def advance(self, n: int, note: str = "") -> None:
        """`n` more done; `note` is said after the figures (e.g. how many came from the cache)."""
        self.done += n
        self.note = note
        now = self._clock()
        if now - self._logged >= self._log_every:
            self._logged = now
            self._emit_line()
        elif self._bar is not None and now - self._drawn >= BAR_EVERY_SECONDS:
            self._drawn = now
            self._bar.write("\r" + self.bar_text())
            self._bar.flush()

    def finish(self) -> None:
        """The final line, always logged."""
        self._emit_line()

    def rate(self) -> float:
        elapsed = self._clock() - self._started
        return self.done / elapsed if elapsed > 0 else 0.0

    def eta(self) -> float | None:
        """Seconds left at the rate so far; None without a total or a rate."""
        rate = self.rate()
        if self.total is None or rate <= 0:
            return None
        return max(self.total - self.done, 0) / rate

    def figures(self) -> str:
        """`256/300 trials (85%), 120 trials/s, ETA 0:01`, or without total: `2,000 objects, 900 objects/s`;
        in bytes: `3.4 MiB/10.0 MiB (34%), 1.1 MiB/s, ETA 0:06`."""
        share = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        if self.unit == BYTES:
            done = bytes_text(self.done) if self.total is None else f"{bytes_text(self.done)}/{bytes_text(self.total)}"
            text = f"{done}{share}, {bytes_text(self.rate())}/s"
        else:
            done = f"{self.done:,}" if self.total is None else f"{self.done:,}/{self.total:,}"
            text = f"{done} {self.unit}{share}, {count_text(self.rate())} {self.unit}/s"
        eta = self.eta()
        if eta is not None and self.done < (self.total or 0):
            text += f", ETA {duration_text(eta)}"
        elif self.total is not None and self.done >= self.total:
            text += f", took {duration_text(self._clock() - self._started)}"
        return text

    def line(self) -> str:
        """The log line; the step is not named, as Dagster's log and the CLI name it already."""
        return self.figures() + (f"; {self.note}" if self.note else "")

    def bar_text(self) -> str:
        filled = BAR_WIDTH * min(self.done, self.total) // self.total if self.total else 0
        bar = f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] " if self.total else ""
        return f"{self.step} {bar}{self.figures()}\x1b[K"

    def _emit_line(self) -> None:
        if self._bar is not None:
            self._bar.write("\r\x1b[K")  # the bar's line is cleared for the log line, redrawn after
            self._bar.flush()
        self._log(self.line())


class FileTransfer:
    """Files copied or uploaded one batch after another (the publish step): bytes done/total, rate
    and ETA, then files done/total, e.g. `3.4 MiB/10.0 MiB (34%), 1.1 MiB/s, ETA 0:06; 120/400 files`."""

    def __init__(
        self,
        step: str,
        sizes: list[int],
        log: Progress,
        *,
        bar: TextIO | None = None,
        clock: Clock = time.monotonic,
        log_every: float = LOG_EVERY_SECONDS,
    ) -> None:
        self.files, self.files_done = len(sizes), 0
        self.reporter = ProgressReporter(step, BYTES, sum(sizes), log, bar=bar, clock=clock, log_every=log_every)

    def advance(self, files: int, size: int) -> None:
        self.files_done += files
        self.reporter.advance(size, f"{self.files_done:,}/{self.files:,} files")

    def finish(self) -> None:
        self.reporter.finish()

    def finish_all(self) -> None:
        """Every file is there now, counted or not (a commit that landed on a failed response is
        re-planned, not counted): the rest as done, then the final line."""
        total = self.reporter.total or 0
        self.advance(self.files - self.files_done, max(0, total - self.reporter.done))
        self.finish()
