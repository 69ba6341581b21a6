"""Progress bars: ``tqdm`` when it is installed, else a tiny dependency-free bar on stderr.

:func:`progress_bar` gives a ``tqdm`` bar on a terminal or in an interactive notebook, else a
:class:`Progress` that writes one plain line every few seconds (a file, a pipe, a CI log).  In auto mode
a bar shows only on a terminal or after :data:`AUTO_AFTER_S` seconds, so short runs stay silent.
"""

from __future__ import annotations

import importlib.util
import sys
import time

AUTO_AFTER_S = 2.0  # auto mode: start drawing after this many seconds
_TTY_EVERY_S = 0.1  # redraw interval on a terminal
_LOG_EVERY_S = 5.0  # redraw interval when stderr is a file or a pipe
_WIDTH = 24


def _fmt_time(seconds: float) -> str:
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        return "?"
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _kernel():
    """The Jupyter kernel this code runs in, or None (a terminal, a script, a test run)."""
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return None
    try:
        ip = shell.get_ipython()
    except AttributeError:  # pragma: no cover - an unusual IPython
        return None
    if ip is None or type(ip).__name__ != "ZMQInteractiveShell":
        return None
    return getattr(ip, "kernel", None)


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (where stderr is not a terminal but a widget can be drawn)."""
    return _kernel() is not None


def interactive_kernel() -> bool:
    """True in a Jupyter kernel driven by a person: its current request accepts ``input()``.

    Headless runners (``jupyter nbconvert --execute``, nbclient, papermill) send every cell with
    ``allow_stdin=False``; there a progress bar would only be saved into the notebook, frozen, with
    its widget state, so :func:`progress_bar` draws none.  Takes nothing; returns a bool.

    >>> interactive_kernel()   # a test run or a script: no kernel
    False
    """
    kernel = _kernel()
    return kernel is not None and bool(getattr(kernel, "_allow_stdin", False))


def _widgets() -> bool:
    """Whether ``tqdm.auto`` can draw a widget (ipywidgets installed), without importing it."""
    return importlib.util.find_spec("ipywidgets") is not None


def progress_bar(total: int, desc: str = "", enabled: bool | None = None, stream=None):
    """A progress bar with ``update(k)``, ``close()`` and context-manager use.

    Parameters
    ----------
    total, desc, enabled, stream
        As for :class:`Progress`.  ``enabled=None`` (auto): a ``tqdm`` bar appears once the
        run has lasted :data:`AUTO_AFTER_S` seconds, the plain bar at once on a terminal
        and after :data:`AUTO_AFTER_S` seconds elsewhere; ``True`` always, ``False`` never.

    Returns
    -------
    a ``tqdm.auto`` bar on a terminal, or a widget in an interactive notebook with
    ipywidgets (removed when the run ends), when ``tqdm`` is installed and ``stream`` is not
    given; :class:`Progress` otherwise.  A headless kernel (``jupyter nbconvert --execute``:
    :func:`interactive_kernel` is false) gets no bar in auto mode.

    Examples
    --------
    >>> with progress_bar(2, "demo", enabled=False) as bar:
    ...     bar.update(2)
    """
    if enabled is not False and stream is None:
        out = sys.stderr
        try:
            tty = bool(out.isatty())
        except (AttributeError, ValueError):
            tty = False
        if _in_notebook():
            if not interactive_kernel():
                # headless execution: nothing to watch the bar; auto draws none, True a plain line
                return Progress(total, desc, enabled=bool(enabled), stream=stream)
            if _widgets():
                try:
                    # optional dependency (tqdm)
                    from tqdm.auto import tqdm
                except ImportError:
                    pass
                else:
                    # leave=False: the widget is closed and removed when the run ends (no frozen bar)
                    return tqdm(total=total, desc=desc or None, leave=False, delay=0 if enabled else AUTO_AFTER_S)
        elif tty:
            try:
                # optional dependency (tqdm)
                from tqdm.auto import tqdm
            except ImportError:
                pass
            else:
                return tqdm(total=total, desc=desc or None, file=out, leave=True, dynamic_ncols=True,
                            delay=0 if enabled else AUTO_AFTER_S)
    return Progress(total, desc, enabled=enabled, stream=stream)


def counted(items, total: int, desc: str = ""):
    """``items``, with a :func:`progress_bar` (auto mode) that counts each item once the loop is done with it
    (a ``continue`` included), closed when the loop ends or is left.

    >>> [i for i in counted(range(3), 3, "demo")]
    [0, 1, 2]
    """
    with progress_bar(total, desc) as bar:
        for item in items:
            yield item
            bar.update()


class Progress:
    """Progress of ``total`` steps, drawn on ``stream`` (default: ``sys.stderr``).

    Parameters
    ----------
    total : int
        Number of steps expected.
    desc : str
        Label printed in front of the bar.
    enabled : bool or None
        ``True`` always draws, ``False`` never draws (no output at all),
        ``None`` draws when the stream is a TTY or after ``AUTO_AFTER_S`` seconds.
    stream : file-like, optional
        Where to draw; defaults to ``sys.stderr`` looked up at construction.

    >>> with Progress(3, "demo", enabled=False) as bar:
    ...     for _ in range(3):
    ...         bar.update()
    >>> bar.count
    3
    """

    def __init__(self, total: int, desc: str = "", enabled: bool | None = None, stream=None):
        self.total = max(int(total), 0)
        self.desc = desc
        self.stream = sys.stderr if stream is None else stream
        try:
            self._tty = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self._tty = False
        self.enabled = enabled
        self.count = 0
        self._start = time.monotonic()
        self._last_draw = -float("inf")
        self._drawn = False
        self._drawn_count = -1
        self._closed = False

    # -- state -------------------------------------------------------------
    def _active(self, now: float) -> bool:
        if self.enabled is None:
            return self._tty or (now - self._start) > AUTO_AFTER_S
        return bool(self.enabled)

    def line(self, now: float | None = None) -> str:
        """The text of the bar at time ``now`` (monotonic seconds).

        >>> bar = Progress(4, "demo", enabled=False)
        >>> bar.update(2)
        >>> bar.line(bar._start + 4)
        'demo: 2/4 [############------------] 0.5 it/s elapsed 00:04 ETA 00:04'
        """
        now = time.monotonic() if now is None else now
        elapsed = max(now - self._start, 1e-9)
        rate = self.count / elapsed
        frac = self.count / self.total if self.total else 1.0
        frac = min(max(frac, 0.0), 1.0)
        filled = int(round(frac * _WIDTH))
        bar = "#" * filled + "-" * (_WIDTH - filled)
        left = self.total - self.count
        eta = left / rate if rate > 0 else float("nan")
        head = f"{self.desc}: " if self.desc else ""
        return (
            f"{head}{self.count}/{self.total} [{bar}] {rate:.3g} it/s "
            f"elapsed {_fmt_time(elapsed)} ETA {_fmt_time(eta) if left > 0 else '00:00'}"
        )

    def _draw(self, now: float, force: bool = False) -> None:
        if not self._active(now):
            return
        every = _TTY_EVERY_S if self._tty else _LOG_EVERY_S
        if not force and now - self._last_draw < every:
            return
        if force and self._drawn_count == self.count and not self._tty:
            return  # this state is already in the log
        self._last_draw = now
        self._drawn_count = self.count
        text = self.line(now)
        try:
            if self._tty:
                self.stream.write("\r" + text + "\x1b[K")
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed stream must not break a run
            return
        self._drawn = True

    # -- API ---------------------------------------------------------------
    def update(self, k: int = 1) -> None:
        """Advance by ``k`` steps and redraw if it is time to.

        >>> import io
        >>> out = io.StringIO()
        >>> bar = Progress(2, "fit", enabled=True, stream=out)
        >>> bar.update(2)
        >>> out.getvalue().startswith("fit: 2/2 [########################]")
        True
        """
        self.count += k
        self._draw(time.monotonic(), force=self.count >= self.total and self._tty)

    def close(self) -> None:
        """Draw the final state (if the bar is showing) and end the line; a second call does nothing.

        >>> import io
        >>> out = io.StringIO()
        >>> bar = Progress(3, enabled=True, stream=out)
        >>> bar.update()
        >>> bar.close(); bar.close()
        >>> out.getvalue().count("1/3")
        1
        """
        if self._closed:
            return
        self._closed = True
        now = time.monotonic()
        if self._drawn or self._active(now):
            self._draw(now, force=True)
        if self._drawn and self._tty:
            try:
                self.stream.write("\n")
                self.stream.flush()
            except (OSError, ValueError):
                pass

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
