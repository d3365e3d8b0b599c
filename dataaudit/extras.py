"""Optional dependencies: which extra installs each, whether it is installed, and modules imported on first use.

The core (text, JSON, conversations, dedup, contamination, clean) needs none of them. A command imports one only
when the data or an option needs it, so `dataaudit --help` and a text-only audit never load torch (~1 s).
"""
from __future__ import annotations

import importlib
import importlib.util
from functools import cache

# import name -> the extra that installs it (pyproject.toml's optional-dependencies)
EXTRAS = {"torch": "guard", "safetensors": "guard", "webdataset": "guard", "PIL": "images",
          "tokenizers": "tokenizers", "ray": "ray", "datasketch": "datasketch", "detect_secrets": "secrets",
          "pycld2": "language", "av": "media", "msgpack": "tars", "cbor2": "tars", "lm_eval": "lmeval",
          "yaml": "lmeval"}
# import name -> the package's name, where a message should say that instead
PACKAGES = {"detect_secrets": "detect-secrets", "av": "av (PyAV)", "lm_eval": "lm-eval", "yaml": "PyYAML"}


class MissingExtra(ImportError):
    """An optional dependency the data or an option needs is not installed; the message says what to install."""


def install_hint(module: str) -> str:
    return f"pip install 'dataaudit[{EXTRAS[module]}]'"


def missing_message(module: str, what: str, need: str = "needs") -> str:
    """'<what> needs torch, which is not installed: pip install 'dataaudit[guard]''"""
    return f"{what} {need} {PACKAGES.get(module, module)}, which is not installed: {install_hint(module)}"


@cache
def available(module: str) -> bool:
    """Whether `module` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(module: str, what: str | None = None):
    """Import `module`, or raise MissingExtra naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] != module.split(".")[0]:
            raise   # the module is there but one of its own imports failed: its error, not ours
        raise MissingExtra(missing_message(module, what or "this")) from None


class LazyModule:
    """`torch = LazyModule("torch", globals())` at module level: the module is imported on the first attribute
    access, and then replaces this proxy in that namespace, so every later access is a plain global lookup (no
    cost on hot paths). Functions use it as they would the module; module-level code must not touch it."""

    __slots__ = ("_name", "_namespace", "_alias")

    def __init__(self, name: str, namespace: dict, alias: str | None = None):
        self._name, self._namespace, self._alias = name, namespace, alias or name.rpartition(".")[2]

    def __getattr__(self, attr: str):
        module = require(self._name)
        self._namespace[self._alias] = module
        return getattr(module, attr)


def lazy_exports(package: str, exports: dict[str, tuple[str, ...]]):
    """A package's `__getattr__` (PEP 562) that imports each re-exported name from its module on first use, so
    importing the package (for its declarations, such as FILES) loads none of its heavy modules.
    `exports`: relative module name -> the names it provides."""
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(where[name], package), name)

    return __getattr__
