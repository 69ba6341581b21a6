"""Sphinx configuration of the symrmt API reference (built from the docstrings).

Build: ``python -m sphinx -W -q -b html docs/api OUTDIR`` from the repository root.
Everything needed is local: autodoc, napoleon (NumPy-style sections), the
bundled ``alabaster`` theme, and no intersphinx, so the build needs no network.
"""

import importlib.util
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, ROOT)  # document this checkout's package, not an installed copy

project = "symrmt"
author = "symrmt developers"
copyright = "symrmt developers"  # noqa: A001 - Sphinx's name for it

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]

napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

# ignore-module-all: document each object once, in the module that defines it; a name that a
# module re-exports through __all__ (symrmt.limit, symrmt.models.attention.theory.BranchError, ...) is
# not documented again there, which would make every cross-reference to it ambiguous
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# the optional extras (plotting, pretrained weights, LaTeX parsing, progress widgets, data frames)
# need not be installed: those that are missing are mocked, those that are present are used as they are
_OPTIONAL = ["matplotlib", "safetensors", "antlr4", "pandas", "xarray", "tqdm", "dask", "distributed"]
autodoc_mock_imports = [name for name in _OPTIONAL if importlib.util.find_spec(name) is None]

exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path = []
