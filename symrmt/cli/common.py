"""What the CLI's verbs share: exit codes, argument types, the common flags, and printing.

Argparse and printing only; the computations live in the library.  :func:`json_text` is the one JSON
writer of every verb (strict JSON: no ``NaN`` or ``Infinity``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from fractions import Fraction

import mpmath

from symrmt.models.attention.geometry_io import load_geometry
from symrmt.models.attention.geometry import Geometry, LowRankGeometry
from symrmt.models.attention.params import DIAGONALS, check_gammas, to_fraction
from symrmt.errors import ParameterError, SolverError
from symrmt.errors import Unavailable  # noqa: F401  (defined in symrmt.errors, importable here)
from symrmt.parsing import LIMITS, did_you_mean, suggest
from symrmt.table import number_value

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_SOLVER = 3

GEOMETRY_FLAGS = (
    ("snr", "||mu||^2 (signal-to-noise ratio)"),
    ("wk2", "||w_K||^2"),
    ("wq2", "||w_Q||^2"),
    ("wkwq", "w_K . w_Q"),
    ("muwk", "mu . w_K"),
    ("muwq", "mu . w_Q"),
)


def gamma_list(text: str) -> list[str]:
    """``--gamma G1[,G2,...]``: a comma-separated list of positive numbers, kept as strings.

    Returns the texts; raises ``argparse.ArgumentTypeError`` (argparse prints it, exit 2) for an empty entry or
    a value :func:`symrmt.models.attention.params.check_gammas` refuses.

    >>> gamma_list("0.01, 1/2,1")
    ['0.01', '1/2', '1']
    >>> gamma_list("0.1,,1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: empty entry in '0.1,,1'; give a comma-separated list such as 0.01,0.1,1
    """
    parts = [s.strip() for s in text.split(",")]
    if any(not s for s in parts):
        raise argparse.ArgumentTypeError(
            f"empty entry in {text!r}; give a comma-separated list such as 0.01,0.1,1"
        )
    try:
        check_gammas(parts)
    except ParameterError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return parts


def number(name: str):
    """An argparse ``type`` for flag ``name``: keeps the text of a number the restricted parser reads
    (decimals, fractions, exact expressions), refuses anything else with the parser's message.

    >>> conv = number("--c")
    >>> conv(" 1/2 ")
    '1/2'
    >>> conv("c")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --c: cannot read 'c' as a number ...
    """
    def conv(text: str) -> str:
        try:
            to_fraction(text, name)
        except ParameterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return text.strip()

    conv.__name__ = name
    return conv


def int_at_least(name: str, minimum: int, limit: str | None = None):
    """An integer flag ``>= minimum``; with ``limit``, also ``<= LIMITS[limit]`` (symrmt.parsing).

    Returns the argparse ``type`` (a function of the text); it raises ``argparse.ArgumentTypeError``.

    >>> conv = int_at_least("--n", 2, "points")
    >>> conv("64")
    64
    >>> conv("1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --n must be >= 2, got 1
    >>> conv("20000")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: --n = 20000 is above the limit 10000 (LIMITS['points'], see docs/input.md)
    """
    def conv(text: str) -> int:
        if len(text) > 30:
            raise argparse.ArgumentTypeError(f"{name}: {text[:30]!r}... is not a small integer")
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be >= {minimum}, got {value}")
        if limit is not None and value > LIMITS[limit]:
            raise argparse.ArgumentTypeError(f"{name} = {value} is above the limit {LIMITS[limit]} "
                                             f"(LIMITS[{limit!r}], see docs/input.md)")
        return value

    conv.__name__ = name
    return conv


#: the message of the last argparse usage error (``symrmt.cli.app`` reports it as JSON under ``--json``)
LAST_USAGE_ERROR = None


#: a word that starts with a minus sign and reads as a number (-3/10, -.5, -0.5,0.5, -(1/2), -sqrt(2), -pi)
#: is a value, not an option (argparse's own test takes only -3 and -0.5, so --muwq -3/10 was refused)
_NEGATIVE_VALUE = re.compile(r"^-(?:[\d.(]|(?:pi|E)\b|[A-Za-z_]\w*\()")


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors name the program and exit with code 2.

    No abbreviations (``--digit`` is not ``--digits``: ``allow_abbrev=False``); an unknown flag is
    named first, with the closest known ones, even when a required flag is also missing (``--gama 0.1``
    is a typo of ``--gamma``, not a missing ``--gamma``); an invalid choice gets the closest choices.

    >>> p = Parser(prog="demo")
    >>> _ = p.add_argument("--gamma", required=True)
    >>> p.unknown_flags(["--gama", "0.1"])
    'unrecognized argument --gama (did you mean --gamma?)'
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_VALUE
        self._words = []

    def parse_known_args(self, args=None, namespace=None):
        """As argparse's, but a verb's leftover words are an error that names the flag meant.

        >>> p = Parser(prog="demo")
        >>> _ = p.add_argument("--digits", type=int)
        >>> p.parse_known_args(["--digits", "20"])
        (Namespace(digits=20), [])
        """
        self._words = list(sys.argv[1:] if args is None else args)
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and self._subparsers is None:  # a verb's parser: its leftovers are its own
            self.error(self.unknown_flags(extras) or f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras

    def _print_message(self, message, file=None):
        """As argparse's, but a failed write of ``--help``/``--version`` to stdout raises its ``OSError`` (argparse
        drops it and exits 0 with the text lost) for :func:`symrmt.cli.app.main` to report; stderr stays quiet."""
        if message and (file is sys.stdout or file is sys.__stdout__):
            file.write(message)
            file.flush()
            return
        super()._print_message(message, file)

    def unknown_flags(self, words) -> str | None:
        """The message naming the flags of ``words`` this parser does not know (with suggestions), or None.

        >>> p = Parser(prog="demo")
        >>> _ = p.add_argument("--digits")
        >>> p.unknown_flags(["--digit", "5", "--json", "-3/10"])
        'unrecognized arguments --digit (did you mean --digits?), --json'
        >>> p.unknown_flags(["--digits", "5"]) is None
        True
        """
        known = list(self._option_string_actions)
        bare = {k.lstrip("-"): k for k in known}  # compared without the dashes, which every flag shares
        verbs = {c for a in self._actions if isinstance(a, argparse._SubParsersAction) for c in a.choices}
        parts = []
        for word in words:
            if word == "--" or word in verbs:  # a verb's words are its own parser's
                break
            flag = word.split("=", 1)[0]
            if not flag.startswith("-") or flag in known or self._negative_number_matcher.match(word):
                continue
            close = [bare[w] for w in suggest(flag.lstrip("-"), bare, cutoff=0.7)]
            if close:
                parts.append(f"{flag} (did you mean {' or '.join(close)}?)")
            elif not re.match(r"^--?[A-Za-z][\w-]*$", flag):  # a value that starts with '-', not a flag
                parts.append(f"{word} (a value that starts with '-' goes after '--', or as --FLAG=VALUE)")
            else:
                parts.append(flag)
        if not parts:
            return None
        return f"unrecognized argument{'s' if len(parts) > 1 else ''} " + ", ".join(parts)

    def error(self, message):  # pragma: no cover - argparse calls it
        """Record the usage error (a typo named with the closest flag) and exit with code 2.

        >>> import contextlib, io
        >>> p = Parser(prog="demo")
        >>> with contextlib.redirect_stderr(io.StringIO()) as err:
        ...     try:
        ...         p.error("argument --n: bad value")
        ...     except SystemExit as exc:
        ...         code = exc.code
        >>> code, err.getvalue().splitlines()[-1]
        (2, 'demo: error: argument --n: bad value')
        """
        global LAST_USAGE_ERROR
        if message.startswith(("the following arguments are required", "unrecognized arguments")):
            message = self.unknown_flags(self._words) or message  # a typo first: it is why a flag is missing
        else:
            message += self._choice_hint(message)
        LAST_USAGE_ERROR = f"{self.prog}: {message}"
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")

    def _choice_hint(self, message) -> str:
        """``; did you mean 'limit'?`` after argparse's ``invalid choice: 'limt'``, or ``""``."""
        got = re.search(r"invalid choice: '([^']*)'", message)
        if not got:
            return ""
        choices = [str(c) for a in self._actions if a.choices for c in a.choices]
        return did_you_mean(suggest(got.group(1), choices))


class MergeValues(argparse.Action):
    """A ``NAME=VALUE, ...`` flag such as ``--at`` given more than once: the texts are joined, so that
    ``--at c=1/2 --at gamma=1`` is ``--at 'c=1/2, gamma=1'`` (a name given twice is then refused).

    >>> p = Parser(prog="demo")
    >>> _ = p.add_argument("--at", action=MergeValues)
    >>> p.parse_args(["--at", "c=1/2", "--at", "gamma=1"]).at
    'c=1/2, gamma=1'
    """

    def __call__(self, parser, namespace, values, option_string=None):
        before = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, f"{before}, {values}" if before else values)


def cli_message(exc, args) -> str:
    """The message of ``exc`` in the command line's own spelling: the values of a trace-engine expression
    are given by ``--at`` (and, in ``trace-sweep``, ``--grid``), not by ``at=`` and ``grid=``.

    >>> from symrmt.engine.lang.node import ModelError
    >>> ns = argparse.Namespace(verb="trace", at="c=1/2")
    >>> cli_message(ModelError("no value given for gamma (pass them in at=...)", missing=["gamma"]), ns)
    "no value given for gamma: add it to --at, e.g. --at 'c=1/2, gamma=VALUE'"
    """
    if not (getattr(exc, "missing", None) or getattr(exc, "unknown", None)):  # symrmt.engine.lang.node.ModelError's
        return str(exc)
    grid = getattr(args, "grid", None) is not None and args.verb == "trace-sweep"
    at = (getattr(args, "at", None) or "").strip().rstrip(",")
    if exc.missing:
        names = ", ".join(exc.missing)
        example = ", ".join([*([at] if at else []), *(f"{m}=VALUE" for m in exc.missing)])
        where = "a --grid axis or --at" if grid else "--at"
        return (f"no value given for {names}: add {'it' if len(exc.missing) == 1 else 'them'} to {where}, "
                f"e.g. --at '{example}'")
    if exc.unknown:
        close = [w for u in exc.unknown for w in suggest(u, exc.known)]
        where = "--grid/--at" if grid else "--at"
        return (f"unknown parameter {', '.join(exc.unknown)} in {where}{did_you_mean(close)} "
                f"(the expression's parameters: {', '.join(exc.known) or 'none'})")
    return str(exc)


def add_f(p, required: bool = True):
    """Add ``--f EXPR`` (the nonlinearity: a preset or an expression in ``t``) to the parser ``p``.

    >>> import argparse
    >>> p = argparse.ArgumentParser(allow_abbrev=False)
    >>> add_f(p)
    >>> p.parse_args(["--f", "tanh"]).f
    'tanh'
    """
    p.add_argument(
        "--f",
        required=required,
        default=None,
        metavar="EXPR",
        help="nonlinearity: a preset (tanh, relu, erf, sin, cos, gelu, sigmoid, softplus, linear, abs, sign, poly2) "
        "or an expression in t, e.g. 'erf(t)' or 'Max(t, 0) - 1/sqrt(2*pi)'",
    )
    p.add_argument("--center", action="store_true", help="subtract a_0 = E[f(xi)] (the theory needs a_0 = 0)")


def add_geometry(p):
    """Add the geometry flags (Gram entries, cosines, ``--geometry FILE``) to the parser ``p``; all default
    to the empty geometry (``mu = 0``, ``W = I``).

    >>> import argparse
    >>> p = argparse.ArgumentParser(allow_abbrev=False)
    >>> add_geometry(p)
    >>> p.parse_args(["--snr", "2"]).snr, p.parse_args([]).wk2
    ('2', '0')
    """
    g = p.add_argument_group("geometry (Gram data of mu, w_K, w_Q; all default 0: mu = 0, W = I)")
    for name, what in GEOMETRY_FLAGS:
        g.add_argument(f"--{name}", type=number(f"--{name}"), default="0", metavar="X", help=what)
    for name, pair in (("muwk", "mu, w_K"), ("muwq", "mu, w_Q"), ("wkwq", "w_K, w_Q")):
        g.add_argument(f"--cos-{name}", type=number(f"--cos-{name}"), default=None, metavar="COS",
                       help=f"cosine of the angle between {pair} (in [-1, 1]; sets {name} = COS * the two norms; "
                       f"exclusive with --{name})")
    g.add_argument("--geometry", metavar="FILE", default=None,
                   help="rank-r weights W = alpha I + sum_j w_K^j w_Q^j^T instead of the flags above: a JSON file "
                   '{"gram": [[...]], "alpha": A} with the (2r+1)x(2r+1) Gram matrix of (mu, w_K^1..r, w_Q^1..r) '
                   "(numbers or fraction strings), or a .npy array of shape (2r+1, p) whose rows are those vectors")
    g.add_argument("--alpha", type=number("--alpha"), default=None, metavar="A",
                   help="scale of the identity part, W = alpha I + low rank (default 1, or the file's alpha)")
    g.add_argument("--exact-params", action="store_true",
                   help="print the parameters exactly: an irrational inner product (from a cosine or sqrt(2)) as "
                   "its 1000-digit fraction instead of a decimal at --digits")


def add_model(p, gamma_help, required: bool = True):
    """Add the model's flags to the parser ``p``: ``--c``, ``--gamma`` (help text ``gamma_help``), the
    geometry and ``--diagonal``.

    >>> import argparse
    >>> p = argparse.ArgumentParser(allow_abbrev=False)
    >>> add_model(p, "ridge values")
    >>> a = p.parse_args(["--c", "1/2", "--gamma", "0.1,1"])
    >>> a.c, a.diagonal
    ('1/2', 'zero')
    """
    p.add_argument("--c", required=required, type=number("--c"), metavar="C",
                   help="aspect ratio p/n > 0 (e.g. 0.5 or 1/2)")
    p.add_argument("--gamma", required=required, type=gamma_list, metavar="G1[,G2,...]", help=gamma_help)
    add_geometry(p)
    p.add_argument("--diagonal", choices=DIAGONALS, default="zero", help="K_ii = 0 (zero, default) or kept (keep)")


WORKERS_HELP = ("1 (default): trials in this process; N > 1: a local Dask cluster of N worker processes, at most "
                "the CPU cores available (at least 2) (pip install 'symrmt[dask]')")
SCHEDULER_HELP = ("run the trials on an existing Dask cluster: tcp://127.0.0.1:PORT (loopback), or tls://HOST:PORT "
                  "with --tls-ca-file/--tls-cert/--tls-key. A scheduler is trusted code: Dask's protocol lets it and "
                  "its workers run code in this process; connect only to one you would let run code as you")


def add_executor(p, workers_default=1):
    """``--workers N | --scheduler ADDRESS`` and the scheduler's terms (``--trust-scheduler``, TLS files).

    >>> p = Parser(prog="demo")
    >>> add_executor(p, workers_default=2)
    >>> a = p.parse_args([])
    >>> a.workers, a.scheduler, a.trust_scheduler
    (2, None, False)
    """
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int_at_least("--workers", 1), default=workers_default, help=WORKERS_HELP)
    add_scheduler(p, g)


def add_scheduler(p, group):
    """``--scheduler`` (in ``group``, exclusive with ``--workers``) and the flags of its terms.

    >>> p = Parser(prog="demo")
    >>> add_scheduler(p, p.add_mutually_exclusive_group())
    >>> p.parse_args(["--scheduler", "tcp://127.0.0.1:8786"]).scheduler
    'tcp://127.0.0.1:8786'
    """
    group.add_argument("--scheduler", metavar="ADDRESS", default=None, help=SCHEDULER_HELP)
    p.add_argument("--trust-scheduler", action="store_true",
                   help="allow plain tcp:// to a scheduler that is not on this machine (you run it, on a network "
                   "you trust: it can run code in this process)")
    p.add_argument("--tls-ca-file", metavar="PEM", default=None, help="for a tls:// scheduler: the CA certificate")
    p.add_argument("--tls-cert", metavar="PEM", default=None, help="for a tls:// scheduler: this client's certificate")
    p.add_argument("--tls-key", metavar="PEM", default=None, help="for a tls:// scheduler: this client's key")


def scheduler_of(args):
    """The checked :class:`symrmt.simulation.scheduler.Scheduler` of the flags, or ``None``.

    Raises :class:`~symrmt.errors.ParameterError` for a scheduler's terms without ``--scheduler`` (and whatever
    :class:`~symrmt.simulation.scheduler.Scheduler` refuses).

    >>> from types import SimpleNamespace
    >>> scheduler_of(SimpleNamespace(scheduler=None)) is None
    True
    >>> scheduler_of(SimpleNamespace(scheduler=None, trust_scheduler=True))
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: --trust-scheduler apply to --scheduler: give --scheduler ADDRESS
    """
    # import-time cost: the CLI's start loads no symrmt.simulation.scheduler
    from symrmt.simulation.scheduler import Scheduler

    terms = {"--trust-scheduler": getattr(args, "trust_scheduler", False), "--tls-ca-file": getattr(args, "tls_ca_file", None),
             "--tls-cert": getattr(args, "tls_cert", None), "--tls-key": getattr(args, "tls_key", None)}
    if getattr(args, "scheduler", None) is None:
        given = [k for k, v in terms.items() if v not in (None, False)]
        if given:
            raise ParameterError(f"{', '.join(given)} apply to --scheduler: give --scheduler ADDRESS")
        return None
    return Scheduler(args.scheduler, trust=terms["--trust-scheduler"], tls_ca_file=terms["--tls-ca-file"],
                     tls_cert=terms["--tls-cert"], tls_key=terms["--tls-key"])


def add_simulation(p, n_help=None):
    """``--n``, ``--trials``, ``--seed`` and ``--store`` of a verb's ``--simulate`` (a Monte-Carlo at size ``n``);
    ``n_help``: the help of ``--n`` for a verb where it means more (its default is then ``None``, read as 512
    by the simulation).

    The defaults are ``None`` (read as 512, 10 and 0 by :func:`simulation_flags`), so that a flag typed
    without ``--simulate`` is refused, never silently ignored.

    >>> p = Parser(prog="demo")
    >>> add_simulation(p)
    >>> a = p.parse_args(["--trials", "4"])
    >>> a.n, a.trials, a.seed, a.store
    (None, 4, None, None)
    """
    p.add_argument("--n", type=int_at_least("--n", 2), default=None,
                   help="simulation size n (default 512)" if n_help is None else n_help)
    p.add_argument("--trials", type=int_at_least("--trials", 2), default=None, help="simulation trials (default 10)")
    p.add_argument("--seed", type=int_at_least("--seed", 0), default=None, help="simulation root seed (default 0)")
    p.add_argument("--store", metavar="PATH", default=None,
                   help="trial store (SQLite file) for --simulate: reuse stored trials, keep each new one")


def simulation_flags(args, flags=("trials", "seed")) -> None:
    """Refuse the simulation ``flags`` (attribute names) typed without ``--simulate`` (:class:`ParameterError`
    naming them); with ``--simulate`` fill the ones left out with their defaults (``trials`` 10, ``seed`` 0,
    ``n`` 512).

    >>> from types import SimpleNamespace
    >>> a = SimpleNamespace(simulate=True, trials=None, seed=3)
    >>> simulation_flags(a); (a.trials, a.seed)
    (10, 3)
    >>> simulation_flags(SimpleNamespace(simulate=False, trials=4, seed=None))
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: --trials applies to the simulation: add --simulate
    """
    if not args.simulate:
        given = [f"--{f}" for f in flags if getattr(args, f, None) is not None]
        if given:
            raise ParameterError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to the simulation: "
                                 "add --simulate")
        return
    for f, default in (("trials", 10), ("seed", 0), ("n", 512)):
        if f in flags and getattr(args, f, None) is None:
            setattr(args, f, default)


def add_output(p):
    """Add ``--digits`` (default 15) and ``--json`` to the parser ``p``.

    >>> import argparse
    >>> p = argparse.ArgumentParser(allow_abbrev=False)
    >>> add_output(p)
    >>> a = p.parse_args(["--digits", "30"])
    >>> a.digits, a.json
    (30, False)
    """
    p.add_argument("--digits", type=int_at_least("--digits", 1, "digits"), default=15, help="significant digits (default 15)")
    p.add_argument("--json", action="store_true", help="JSON on stdout")


def geometry_of(args):
    """The rank-one :class:`Geometry` of the flags, or a :class:`LowRankGeometry` from ``--geometry``/``--alpha``.

    Raises :class:`~symrmt.errors.ParameterError` for exclusive flags given together.

    >>> from types import SimpleNamespace
    >>> flags = dict(snr="1", wk2="0", wq2="0", wkwq="0", muwk="0", muwq="0")
    >>> geometry_of(SimpleNamespace(geometry=None, alpha=None, **flags)).snr
    Fraction(1, 1)
    >>> geometry_of(SimpleNamespace(geometry="g.json", alpha=None, **flags))
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: --geometry replaces the rank-one flags; drop --snr
    """
    path = getattr(args, "geometry", None)
    alpha = getattr(args, "alpha", None)
    cosines = {f"cos_{n}": getattr(args, f"cos_{n}", None) for n in ("muwk", "muwq", "wkwq")}
    if path is None:
        values = {name: getattr(args, name) for name, _ in GEOMETRY_FLAGS}
        if any(v is not None for v in cosines.values()):
            for n in ("muwk", "muwq", "wkwq"):
                if cosines[f"cos_{n}"] is not None and to_fraction(values[n], n) != 0:
                    raise ParameterError(f"--cos-{n} and --{n} are exclusive (the cosine sets {n})")
            geom = Geometry.from_angles(**values, **cosines)
        else:
            geom = Geometry(**values)
        note_projection(geom)
        return geom if alpha is None else LowRankGeometry.from_geometry(geom, alpha)
    set_flags = [f"--{name}" for name, _ in GEOMETRY_FLAGS if to_fraction(getattr(args, name), name) != 0]
    set_flags += [f"--{k.replace('_', '-')}" for k, v in cosines.items() if v is not None]
    if set_flags:
        raise ParameterError(f"--geometry replaces the rank-one flags; drop {', '.join(set_flags)}")
    geom = load_geometry(path, alpha)
    note_projection(geom)
    return geom


def note_projection(geom) -> None:
    """Say on stderr when ``geom`` was projected onto the PSD cone (a rounded Gram matrix), and by how much.

    >>> from types import SimpleNamespace
    >>> import contextlib, io
    >>> with contextlib.redirect_stderr(io.StringIO()) as err:
    ...     note_projection(SimpleNamespace(projection=1e-12))
    ...     note_projection(SimpleNamespace(projection=None))
    >>> err.getvalue().count("outside the PSD cone by 1e-12")
    1
    """
    if getattr(geom, "projection", None) is not None:
        print(f"symrmt: note: the Gram matrix was outside the PSD cone by {geom.projection:.2g} of its scale "
              "(rounding); it was made exactly PSD at its numerical rank (entries moved by at most that much)",
              file=sys.stderr)


def add_attention(p, simulate: bool):
    """``--attention entrywise|softmax`` (and, for ``simulate``, ``--no-mask``).

    >>> p = Parser(prog="demo")
    >>> add_attention(p, simulate=True)
    >>> a = p.parse_args(["--attention", "softmax", "--no-mask"])
    >>> a.attention, a.mask
    ('softmax', False)
    """
    p.add_argument("--attention", default="entrywise", metavar="KIND",
                   help="entrywise (default: K = f(X^T W X/sqrt(p))/sqrt(p)) or softmax "
                   "(K = (n/sqrt(p)) row-softmax(X^T W X/sqrt(p)) with S_ii = -inf; no --f)")
    p.add_argument("--no-mask", dest="mask", action="store_false",
                   help="softmax: keep the self term S_ii" + ("" if simulate else
                                                              " (refused: the unmasked model has no limit)"))


def attention_of(args) -> str:
    """The checked ``--attention`` and the ``--f``/``--no-mask`` rules that go with it.

    Raises :class:`~symrmt.errors.ParameterError` for another kind or a flag the kind does not take.

    >>> from types import SimpleNamespace
    >>> flags = dict(f=None, center=False, diagonal="zero", mask=True)
    >>> attention_of(SimpleNamespace(attention="softmax", **flags))
    'softmax'
    >>> attention_of(SimpleNamespace(attention="entrywise", **flags))
    Traceback (most recent call last):
    ...
    symrmt.errors.ParameterError: --f is required (the nonlinearity) unless --attention softmax
    """
    # import-time cost: the CLI's start loads no NumPy
    from symrmt.models.attention.montecarlo import check_attention

    try:
        kind = check_attention(args.attention)
    except ParameterError:
        raise ParameterError(f"--attention must be entrywise or softmax, got {args.attention!r}") from None
    if kind == "softmax":
        if args.f is not None:
            raise ParameterError("--f with --attention softmax: the softmax fixes the kernel, so give no --f")
        if args.center:
            raise ParameterError("--center with --attention softmax: the softmax's kernel is centered by construction")
        if args.diagonal != "zero":
            raise ParameterError("--diagonal keep with --attention softmax: its zero diagonal is the mask "
                                 "(--no-mask keeps the self term in simulate)")
    else:
        if args.f is None:
            raise ParameterError("--f is required (the nonlinearity) unless --attention softmax")
        if not args.mask:
            raise ParameterError("--no-mask is for --attention softmax only")
    return kind


def nonlinearity_of(args):
    """The :class:`~symrmt.hermite.Nonlinearity` of ``--f`` and ``--center``; raises ``ParameterError`` for a bad ``f``.

    >>> from types import SimpleNamespace
    >>> nonlinearity_of(SimpleNamespace(f="t**2", center=True)).expr
    t**2 - 1
    """
    # import-time cost: the CLI's start loads no SymPy or NumPy
    from symrmt.hermite import Nonlinearity

    return Nonlinearity(args.f, center=args.center)


def num(x, digits: int):
    """JSON value of an mpmath number: :func:`symrmt.table.number_value` (the one number writer):
    rounded once, in decimal, to ``digits`` significant digits; then a float when ``digits <= 15`` and
    that float reads back as the same decimal, else the decimal string (a value outside the float64
    normal range, such as ``1e-400``, is never written as ``0.0``, a subnormal or ``inf``).  A value
    that is not finite is an ``ArithmeticError``.

    >>> import mpmath
    >>> num(mpmath.mpf("3.1084952830141509"), 1), num(mpmath.mpf("3.49"), 1)
    (3.0, 3.0)
    >>> num(mpmath.mpf("1e-400"), 15)
    '1.0e-400'
    """
    return number_value(x, digits)


def show(x, digits: int) -> str:
    """``x`` as text with ``digits`` significant digits.

    >>> import mpmath
    >>> show(mpmath.mpf(2) / 3, 5)
    '0.66667'
    """
    return mpmath.nstr(x, digits)


def brief(v) -> str:
    """A long exact fraction (an irrational input rounded to 1000+ digits) shown as ~ its double.

    >>> brief("1/3"), brief("1" * 30 + "/" + "3" * 30)
    ('1/3', '~0.33333333333333331')
    """
    text = str(v)
    if len(text) <= 40 or "/" not in text:
        return text
    return f"~{float(Fraction(text)):.17g}"


def json_text(obj) -> str:
    """The one JSON writer: strict JSON only (no NaN or Infinity); a :class:`~symrmt.errors.SolverError` (an
    ``ArithmeticError``, exit 3) on a non-finite value.

    >>> json_text({"a": 1.5})
    '{"a": 1.5}'
    >>> json_text({"a": float("nan")})
    Traceback (most recent call last):
    ...
    symrmt.errors.SolverError: a result is not finite and cannot be written as JSON (Out of range float values are not JSON compliant...); no value is written
    """
    try:
        return json.dumps(obj, allow_nan=False)
    except ValueError as exc:
        raise SolverError(f"a result is not finite and cannot be written as JSON ({exc}); no value is written") from None


def dump(obj) -> None:
    """Print ``obj`` as strict JSON (:func:`json_text`) on stdout.

    >>> dump({"digits": 15, "values": [0.5]})
    {"digits": 15, "values": [0.5]}
    """
    print(json_text(obj))


def write_text(text: str, out=None, note: str = "") -> None:
    """``text`` to the file ``out`` (UTF-8; ``wrote OUT`` and ``note`` on stderr), or to stdout without ``out``.

    >>> write_text("E_A = 0.5\\n")
    E_A = 0.5
    """
    if out:
        try:
            with open(out, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:  # a full disk, an I/O error: the file named, no traceback
            raise ParameterError(f"--out {out}: cannot write it ({exc.strerror or exc})") from None
        print(f"wrote {out}{note}", file=sys.stderr)
    else:
        sys.stdout.write(text)


def format_table(header, rows, left=()) -> str:
    """Columns right-aligned (numbers), except the indices in ``left`` (text).

    >>> print(format_table(["name", "value"], [["tanh", 0.5], ["relu", 1]], left=(0,)))
    name  value
    ----  -----
    tanh    0.5
    relu      1
    """
    cols = [header, *rows]
    widths = [max(len(str(r[i])) for r in cols) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) if i in left else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in cols]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def theory_limit():
    """The paper's model's ``limit`` function; raises :class:`Unavailable` (exit 3) when that module is
    missing from the installation.

    >>> theory_limit().__module__
    'symrmt.models.attention.theory'
    """
    try:
        # import-time cost: the CLI's start loads no SymPy or NumPy
        from symrmt.models.attention.theory import limit
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("symrmt.models.attention.theory"):
            raise Unavailable("the theory module symrmt.models.attention.theory is not available in this installation") from exc
        raise
    return limit


