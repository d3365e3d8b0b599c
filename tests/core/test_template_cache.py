"""The report templates are compiled once and kept in the cache folder (Jinja2's bytecode cache); a damaged or
unwritable cache is no error: the template is compiled again."""
from __future__ import annotations

import jinja2
import pytest

from dataaudit.report import render


@pytest.fixture
def fresh_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DATAAUDIT_CACHE_DIR", str(tmp_path))
    render._environment.cache_clear()
    yield tmp_path
    render._environment.cache_clear()


def _compiles(monkeypatch) -> list[str]:
    """Record the templates Jinja2 compiles from source from now on."""
    seen = []
    real = jinja2.Environment.compile
    monkeypatch.setattr(jinja2.Environment, "compile",
                        lambda self, source, name=None, *a, **k: seen.append(name) or real(self, source, name, *a, **k))
    return seen


def test_a_template_is_compiled_once_then_loaded_from_the_cache(fresh_environment, monkeypatch):
    seen = _compiles(monkeypatch)
    render._environment().get_template("report.html")
    assert seen == ["report.html"]
    assert len(list((fresh_environment / "templates").glob("*.cache"))) == 1
    render._environment.cache_clear()                  # a new command
    render._environment().get_template("report.html")
    assert seen == ["report.html"]                     # not compiled again


def test_a_damaged_cache_file_is_compiled_again_and_replaced(fresh_environment, monkeypatch):
    render._environment().get_template("report.html")
    (cached,) = (fresh_environment / "templates").glob("*.cache")
    good = cached.read_bytes()
    cached.write_bytes(good[:40] + b"\x00garbage")
    render._environment.cache_clear()
    seen = _compiles(monkeypatch)
    assert render._environment().get_template("report.html").render is not None
    assert seen == ["report.html"]
    assert cached.read_bytes() == good


def test_an_unwritable_cache_folder_renders_all_the_same(monkeypatch, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("DATAAUDIT_CACHE_DIR", str(blocked))
    render._environment.cache_clear()
    try:
        assert render.render("base.html").startswith("<!doctype html>")
    finally:
        render._environment.cache_clear()
