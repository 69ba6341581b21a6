"""Claims of the docs that must follow the code: the tutorial at the top of docs/guide.md runs as written,
and counts are derived from the code (or not stated), never typed once and left to go stale."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docs

ROOT = Path(__file__).resolve().parents[2]


def _tutorial() -> str:
    guide = (ROOT / "docs/guide.md").read_text()
    start = guide.index("## Tutorial: five commands")
    return guide[start:guide.index("\n## 1. The model")]


def _blocks(text: str) -> list[str]:
    """The ```bash blocks of ``text``, dedented."""
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    out = []
    for block in blocks:
        lines = block.splitlines()
        indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
        out.append("\n".join(line[indent:] for line in lines) + "\n")
    return out


def test_tutorial_is_five_commands_that_parse():
    """Steps 1-4 are ``symrmt`` command lines the parser takes as they are written; step 5 is Python."""
    from symrmt.cli.app import build_parser

    blocks = _blocks(_tutorial())
    assert len(blocks) == 5
    for block in blocks[:4]:
        words = shlex.split(block)
        assert words[0] == "symrmt", block
        args = build_parser().parse_args(words[1:])  # an unknown or abbreviated flag would exit 2 here
        assert args.verb == words[1]
    assert blocks[4].startswith("python - <<'EOF'\n") and blocks[4].rstrip().endswith("EOF")


@pytest.mark.slow  # seconds per call: outside the fast tier
def test_tutorial_figure_is_drawn(tmp_path):
    """Step 5 as written (a fresh interpreter in an empty folder) writes its PNG."""
    pytest.importorskip("matplotlib")
    code = _blocks(_tutorial())[4].split("\n", 1)[1].rsplit("EOF", 1)[0]
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    png = tmp_path / "leaky.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_tutorial_numbers_are_the_package_s():
    """The Hermite data quoted in the tutorial against closed forms (for the leaky ReLU max(t, t/10):
    a_1 = (1 + 1/10)/2, nu = 101/200 - (9/10)^2/(2 pi), d = 1) and its two limits as the package prints them."""
    import mpmath

    import symrmt

    text = _tutorial()
    f = symrmt.Nonlinearity("Max(t, t/10)", center=True)
    assert "`a_1 = 0.55`" in text and "`d = 1`" in text and f.d == 1
    nu = re.search(r"`nu = ([0-9.]+)`", text).group(1)
    with mpmath.workdps(30):
        assert abs(f.a_mpf(1, 30) - mpmath.mpf(11) / 20) < mpmath.mpf(10) ** -28
        # nu = E[f^2] - E[f]^2 = (1/2 + 1/200) - (9/10)^2/(2 pi) for f = max(t, t/10), centered
        closed = mpmath.mpf(101) / 200 - mpmath.mpf(81) / 100 / (2 * mpmath.pi)
        assert abs(mpmath.mpf(nu) - closed) < mpmath.mpf(10) ** -15 and abs(f.nu_mpf(30) - closed) < mpmath.mpf(10) ** -28
    th = symrmt.limit(f, "1/2", ["0.1"], symrmt.Geometry(snr=1), digits=20)
    assert f"`E_A(0.1) = {mpmath.nstr(th.attention_mp[0], 20)}`" in text
    assert f"`E_RR(0.1) = {mpmath.nstr(th.ridge_mp[0], 20)}`" in text


def test_verify_prove_help_counts_from_the_registry(capsys):
    """``verify --help`` states how many derivations ``--prove`` covers, computed from the registry; the README
    and docs/prove.md say "every derivation of the default list", which the registry must make true."""
    from symrmt.cli.app import main
    from symrmt.derivations import DERIVATIONS
    from symrmt.derivations.proved import PROVED

    assert main(["verify", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    every = [*DERIVATIONS, "pretrained"]
    assert f"({sum(d in PROVED for d in every)} of the {len(every)} derivations" in out, out
    from symrmt.derivations.proved import NOT_PROVED

    assert set(DERIVATIONS) <= set(PROVED) | set(NOT_PROVED)  # each proved, or its reason written
    for name in ("README.md", "docs/prove.md"):
        text = (ROOT / name).read_text()
        assert "every derivation of the default list" in text, name
        for left_out in set(DERIVATIONS) - set(PROVED):  # the docs name each derivation left out
            assert f"`{left_out}`" in text or f" {left_out} " in text, (name, left_out)
        assert not re.search(r"all (twenty|\d+)[- a-z]* derivations", text), name


def test_no_stale_check_count():
    """The number of checks of ``symrmt verify`` is not written in the guide (it grows with every derivation);
    the guide points at the run's own count."""
    guide = (ROOT / "docs/guide.md").read_text()
    assert not re.search(r"\b\d+ checks at the time of writing", guide)
