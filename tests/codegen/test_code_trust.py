"""Generated code is trusted code: the compile step has no builtins, and the disk cache loads only
files private to the user (symrmt.codegen).
"""

import os
import stat

import pytest
import sympy as sp

from symrmt.codegen import codecache


def _plant(tmp_path, monkeypatch, mode_dir=0o700, mode_file=0o600):
    d = tmp_path / "cache"
    d.mkdir()
    monkeypatch.setenv("SYMRMT_CACHE_DIR", str(d))
    monkeypatch.delenv("SYMRMT_NO_CACHE", raising=False)
    key = codecache.source_key("planted")
    body = "E_RR = 0.123\n"
    assert codecache.store("planted", key, body)
    path = next(d.glob("planted-*.py"))
    os.chmod(path, mode_file)
    os.chmod(d, mode_dir)
    return key, body, path


def test_compile_step_has_no_builtins():
    from symrmt.codegen.compile import compile_expr

    c = sp.Symbol("c")
    with pytest.raises(ValueError, match="undefined functions"):
        compile_expr([c], sp.Function("print")(c))
    fn = compile_expr([c], sp.Max(c, 1) + sp.Abs(c))
    assert fn.__globals__["__builtins__"] == {}
    assert fn(-3) == 4


def test_cache_loads_own_private_file(tmp_path, monkeypatch):
    key, body, _ = _plant(tmp_path, monkeypatch)
    assert codecache.load("planted", key) == body


@pytest.mark.parametrize("mode_dir, mode_file", [(0o777, 0o600), (0o700, 0o666), (0o770, 0o600)])
def test_cache_refuses_writable_by_others(tmp_path, monkeypatch, capsys, mode_dir, mode_file):
    key, _, _ = _plant(tmp_path, monkeypatch, mode_dir, mode_file)
    codecache._WARNED.clear()
    assert codecache.load("planted", key) is None
    assert codecache.load("planted", key) is None
    err = capsys.readouterr().err
    assert err.count("not loading the code cache") == 1 and "writable by group or others" in err


def test_cache_refuses_other_owner(tmp_path, monkeypatch, capsys):
    key, _, _ = _plant(tmp_path, monkeypatch)
    monkeypatch.setattr(os, "getuid", lambda: os.stat(tmp_path).st_uid + 1)
    codecache._WARNED.clear()
    assert codecache.load("planted", key) is None
    assert "owned by uid" in capsys.readouterr().err


def test_cache_folder_created_private(tmp_path, monkeypatch):
    d = tmp_path / "new" / "cache"
    monkeypatch.setenv("SYMRMT_CACHE_DIR", str(d))
    monkeypatch.delenv("SYMRMT_NO_CACHE", raising=False)
    old = os.umask(0)
    try:
        assert codecache.store("x", codecache.source_key("x"), "pass\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
