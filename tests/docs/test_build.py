"""The documentation stands alone and builds.

* No file of the repository points to a document outside it.
* Every relative link in ``README.md`` and ``docs/*.md`` resolves to an existing
  file, and a ``#fragment`` into a Markdown file names one of its headings.
* Every ``symrmt.<module>.<name>`` that ``docs/theory.md`` cites exists, so the
  account of the mathematics keeps pointing at the code that implements it.
* The API reference (Sphinx, ``docs/api``) builds from the docstrings with
  warnings as errors.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docs

ROOT = Path(__file__).resolve().parents[2]

# names of working notes that are not part of the repository; the patterns are
# written so that this file does not match them itself
_NOTES = "|".join(["MATH", "STYLE", "ENGINE"])
OUTSIDE = [
    re.compile(r"\b(?:" + _NOTES + r")\.md\b"),
    re.compile(r"\.\./" + "shared" + r"\b"),
    re.compile(r"\bshared/(?:" + _NOTES + r")\b"),
]
SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", ".ruff_cache", "build", "dist", "_build"}


def _repository_files():
    """Tracked files when git is available, else every file under the root (minus build output)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=30)
        files = [ROOT / p for p in out.stdout.decode().split("\0") if p]
        if files:
            return [f for f in files if f.is_file()]
    except (OSError, subprocess.SubprocessError):
        pass
    found = []
    for base, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".venv") and not d.endswith(".egg-info")]
        found.extend(Path(base) / n for n in names)
    return found


def test_no_pointer_to_documents_outside_the_repository():
    hits = []
    for path in _repository_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary files (figures)
        for lineno, line in enumerate(text.splitlines(), 1):
            if any(p.search(line) for p in OUTSIDE):
                hits.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()[:100]}")
    assert not hits, "pointers to documents that are not in the repository:\n" + "\n".join(hits)


def test_the_outside_patterns_can_fail():
    bad = ["see " + "MATH" + ".md section 2", "``" + "shared/" + "STYLE" + ".md``", "(" + "../" + "shared/x)"]
    assert all(any(p.search(s) for p in OUTSIDE) for s in bad)
    assert not any(p.search("on a shared two-core machine") for p in OUTSIDE)


# ---------------------------------------------------------------- Markdown links

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _headings_with_code(path: Path) -> set:
    """Anchors computed from the raw headings (code spans included), as GitHub renders them."""
    seen: dict = {}
    out = set()
    inside = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            inside = not inside
            continue
        m = None if inside else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = _slug(m.group(1))
            k = seen.get(slug, 0)
            seen[slug] = k + 1
            out.add(slug if k == 0 else f"{slug}-{k}")
    return out


def _markdown_files():
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def _links(path: Path):
    inside = False
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            inside = not inside
            continue
        if inside:
            continue
        for m in LINK.finditer(re.sub(r"`[^`]*`", "``", line)):
            yield lineno, m.group(1)


def test_relative_links_resolve():
    broken = []
    checked = 0
    for md in _markdown_files():
        for lineno, target in _links(md):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                continue
            file_part, _, fragment = target.partition("#")
            dest = md if not file_part else (md.parent / file_part)
            where = f"{md.relative_to(ROOT)}:{lineno}: {target}"
            checked += 1
            if not dest.exists():
                broken.append(f"{where} (no such file)")
            elif fragment and dest.suffix == ".md" and fragment not in _headings_with_code(dest):
                broken.append(f"{where} (no heading with anchor #{fragment})")
    assert checked > 20, f"only {checked} relative links found: is the link pattern right?"
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_link_checker_can_fail(tmp_path):
    md = tmp_path / "x.md"
    md.write_text("# Title\n\n[a](missing.md) [b](#title) [c](#nope)\n```\n[d](in-code.md)\n```\n", encoding="utf-8")
    assert [t for _, t in _links(md)] == ["missing.md", "#title", "#nope"]
    assert _headings_with_code(md) == {"title"}
    assert _slug("10. `symrmt verify` / `symrmt latex`") == "10-symrmt-verify--symrmt-latex"


# ---------------------------------------------------------------- theory.md cites the code

CITED = re.compile(r"`(symrmt(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`")


def _resolve(dotted: str):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def test_theory_cites_existing_code():
    text = (ROOT / "docs" / "theory.md").read_text(encoding="utf-8")
    names = sorted(set(CITED.findall(text)))
    assert len(names) > 30, names
    missing = []
    for name in names:
        try:
            _resolve(name)
        except (ImportError, AttributeError) as exc:
            missing.append(f"{name}: {exc!r}")
    assert not missing, "docs/theory.md cites names that do not exist:\n" + "\n".join(missing)


# ---------------------------------------------------------------- API reference

@pytest.mark.slow  # seconds per call: outside the fast tier
def test_api_reference_builds(tmp_path):
    try:
        import sphinx  # noqa: F401
    except ImportError:
        pytest.skip("sphinx is not installed (pip install '.[test]'); the API reference cannot be built")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
           "-d", str(tmp_path / "doctrees"), str(ROOT / "docs" / "api"), str(tmp_path / "html")]
    # about 12 s of CPU time; the generous limit is for a loaded machine, it only guards against a hang
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, f"sphinx-build failed:\n{res.stdout[-4000:]}\n{res.stderr[-8000:]}"
    index = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    # autodoc really documented the functions (an import failure leaves only the headings)
    for name in ("attention_limit", "fixed_point_system", "Nonlinearity", "simulate"):
        assert name in index, f"{name} missing from the generated API reference"


def test_api_index_lists_every_subpackage():
    """Each public subpackage (a directory with ``__init__.py``, no leading underscore) has an
    ``automodule`` entry in docs/api/index.rst."""
    index = (ROOT / "docs" / "api" / "index.rst").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\.\. automodule:: ([\w.]+)\s*$", index, re.M))
    packages = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "symrmt").rglob("__init__.py")
        if "__pycache__" not in p.parts and not any(part.startswith("_") for part in p.parent.relative_to(ROOT).parts)
    }
    missing = sorted(packages - listed)
    assert not missing, f"add '.. automodule:: NAME' to docs/api/index.rst for: {missing}"
    unknown = sorted(name for name in listed if importlib.util.find_spec(name) is None)
    assert not unknown, f"docs/api/index.rst lists modules that do not exist: {unknown}"
