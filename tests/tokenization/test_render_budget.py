"""Chat templates render within a time and a size budget (dataaudit.tokenization.render): past it the render
raises a TemplateError with a one-line reason; an ordinary template renders exactly as Jinja2's sandbox does."""
from __future__ import annotations

import time

import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from dataaudit.tokenization import render
from dataaudit.tokenization.chat import TemplateError, sandbox

MESSAGES = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
ORDINARY = ("{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}<|{{ m.role }}|>"
            "{{ m.content }}{{ '\\n' * 2 }}{% endfor %}{{ range(3)|list }}{{ range(4)|length }}"
            "{% for i in range(3)|reverse %}{{ i }}{% endfor %}{{ range(10)[2:4]|list }}{{ 3 in range(5) }}"
            "{{ ns.n }}{{ 2 ** 10 }}{{ [1] + [2] }}")


def _render(src: str):
    return sandbox().from_string(src).render(messages=MESSAGES)


def test_an_ordinary_template_renders_as_the_plain_sandbox_does():
    plain = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    assert _render(ORDINARY) == plain.from_string(ORDINARY).render(messages=MESSAGES)


@pytest.mark.parametrize("src", [
    "{{ 'x' * 300000000 }}",
    "{{ [0] * 300000000 }}",
    "{% for i in range(100000) %}{{ 'x' * 3000 }}{% endfor %}",
    "{% set ns = namespace(x='ab') %}{% for i in range(40) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}",
])
def test_a_rendering_over_the_size_budget_is_refused(src):
    with pytest.raises(render.RenderBudgetError, match=f"over {render.RENDER_MAX_CHARS} characters"):
        _render(src)


def test_a_rendering_over_the_time_budget_stops_and_the_template_is_given_up(monkeypatch):
    monkeypatch.setattr(render, "RENDER_SECONDS", 0.2)
    template = sandbox().from_string("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}"
                                     "{% endfor %}")
    for _ in range(render.GIVE_UP_AFTER):
        started = time.monotonic()
        with pytest.raises(render.RenderTimeout, match="ran over 0.2 s"):
            template.render(messages=MESSAGES)
        assert time.monotonic() - started < 1.0
    with pytest.raises(TemplateError, match="not rendered again"):
        template.render(messages=MESSAGES)
    assert _render("{{ messages[0].content }}") == "hi"        # another template is not affected


def test_a_huge_power_is_refused():
    with pytest.raises(render.RenderBudgetError, match="power"):
        _render("{{ 10 ** 100000000 }}")
