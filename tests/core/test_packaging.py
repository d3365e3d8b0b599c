"""What the wheel installs, read from pyproject.toml: every package of the source tree under `dataaudit` (the
top-level pipelines/ folder as `dataaudit.pipelines`), nothing else at the top level (no `fixtures`, no
`pipelines`), and the heavy dependencies only in extras."""
from __future__ import annotations

import tomllib

from tests.paths import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def _source_packages() -> set[str]:
    found = set()
    for folder, name in (("dataaudit", "dataaudit"), ("pipelines", "dataaudit.pipelines")):
        for path in [REPO / folder, *(REPO / folder).rglob("*")]:
            if path.is_dir() and any(path.glob("*.py")):
                found.add(".".join((name,) + path.relative_to(REPO / folder).parts))
    return found


def test_every_package_is_listed_and_nothing_else():
    listed = set(SETUPTOOLS["packages"])
    assert listed - {"dataaudit.report.templates"} == _source_packages()
    assert {p.split(".")[0] for p in listed} == {"dataaudit"}


def test_pipelines_folder_installs_as_dataaudit_pipelines():
    assert SETUPTOOLS["package-dir"] == {"": ".", "dataaudit.pipelines": "pipelines"}


def test_core_dependencies_are_light_and_extras_hold_the_rest():
    names = lambda reqs: {r.split("[")[0].split(">")[0].split("=")[0].strip() for r in reqs}  # noqa: E731
    core = names(PYPROJECT["project"]["dependencies"])
    extras = {k: names(v) for k, v in PYPROJECT["project"]["optional-dependencies"].items()}
    assert core == {"numpy", "pyarrow", "click", "rich", "jinja2", "xxhash", "numba", "scipy", "jsonschema"}
    assert extras["guard"] == {"torch", "safetensors", "webdataset"}
    assert extras["images"] == {"pillow"}
    assert extras["tokenizers"] == {"tokenizers"}
    assert extras["ray"] == {"ray"}
    assert extras["datasketch"] == {"datasketch"}
    assert extras["secrets"] == {"detect-secrets"}
    assert extras["language"] == {"pycld2"}
    assert extras["media"] == {"av"}
    assert extras["tars"] == {"msgpack", "cbor2"}
    assert extras["lmeval"] == {"lm-eval", "pyyaml"}     # not in `all`: lm-eval pulls datasets, evaluate, ...
    assert extras["s3"] == extras["gcs"] == {"pyarrow"}      # built into pyarrow's wheels: a version floor only
    assert extras["azure"] == {"pyarrow", "adlfs"}
    assert extras["hf"] == {"fsspec", "huggingface_hub"}
    assert PYPROJECT["project"]["optional-dependencies"]["all"] == \
        ["dataaudit[guard,images,tokenizers,ray,datasketch,secrets,language,media,tars,hf]"]
    assert PYPROJECT["project"]["license"] == "Apache-2.0"   # SPDX string: no setuptools deprecation banner
