"""The audit's text kernels and dedup's kernels compiled ahead of time, so that a command loads them in a
millisecond instead of importing numba and loading each kernel from numba's cache: ~0.45-0.75 s per command
(numba's import, its type registries, the BLAS probe that imports scipy.linalg), a fifth of the audit of 100 MB and
a third of the dedup of 100,000 short records.

- `build()` (`dataaudit build-kernels`; `make` runs it) compiles the EXPORTS with `numba.pycc` into two extension
  modules, one with numba's reference counting for the kernels that allocate and one without for those compiled
  without it (`_nrt=False`), in `cache_folder()/kernels/<key>/`. The key hashes this folder's sources and those of
  the exported modules elsewhere (every kernel and what it inlines: a kernel module imports only from this folder),
  Python, NumPy and the CPU (the code is built for this CPU's instructions). A build keeps the newest builds of
  other keys (other environments may share the cache folder) up to KEEP_BUILDS.
- Every exported kernel is `nogil` under the JIT, and its compiled twin releases the GIL as well while it runs
  (dedup signs a shard's batches on a thread per core).
- `compiled_kernels(module)` gives `hashing.numba_kernels` the module's kernels from the build whose key matches
  the sources now, or None (not built, stale, `DATAAUDIT_NO_AOT` set, no such module exported): numba's JIT then.

The extension unboxes arrays without checking them (an int32 array given for int64 is read as int64), so each
compiled kernel runs only when every argument is exactly what it was built for: the dtype, the dimensions, C
order, aligned and writable arrays (a read-only array must never be written through), and int or float scalars.
Anything else runs numba's JIT kernel, as without a build, with the same results.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import json
import os
import platform
import shutil
import sys
import sysconfig
import tempfile
import threading
import time
import warnings
from pathlib import Path

import numpy as np

from dataaudit.cache import cache_folder

NO_AOT_ENV = "DATAAUDIT_NO_AOT"

# module -> kernel -> its arguments: arrays as NumPy type codes with one [] per dimension ("u1[]": 1-D uint8,
# "f8[][]": 2-D float64), scalars as "i8" (int), "u8" (a NumPy uint64) and "f8" (float). What the checks and dedup
# pass; tests check that an audit and a dedup call no kernel with anything else.
EXPORTS: dict[str, dict[str, str]] = {
    "dataaudit.dedup._kernels": {
        "band_kernel": "u4[][] i8 i8 u8[][]",
        "jaccard_kernel": "u8[] i8[] i8[] i8[] f8[]",
        "minhash_kernel": "u8[] i8[] u8[] u8[] u4[][]",
        "word_minhash": "u1[] i8[] u1[] u8[] u8 i8 u8[] u8[] u4[][] i8[] u8[] i8[]",
    },
    "dataaudit.textops._codepoint_kernels": {
        "count_marked": "i8[] u1[] u1[] u8[] u8[] u1[] i8[][] i8[] i8[]",
        "holds_c3_or_fffd": "i8[] u1[] b1[]",
        "longest_run": "i8[] u1[] u1[] u8[] u8[] i8[][] i8[]",
        "prose_counts": "i8[] u1[] u1[] u8[] i8[][] i8[] u8[] u8[] i8[] u8[] i8[][]",
        "prose_text": "i8[] u1[] i8[] i8 i8[] u1[]",
    },
    "dataaudit.textops._prefilter_kernels": {
        "need_lines": "i8[] u1[] u1[] i8[] i8[] i8[] i8[] i8[] u1[]",
        "pii_gate": "i8[] u1[] b1[]",
        "secrets_gate": "i8[] u1[] b1[]",
    },
    "dataaudit.textops._kernels": {
        "collapse_ws": "i8[] u1[] i8[] u1[] u1[]",
    },
    "dataaudit.textops._literal_kernels": {
        "count_literals": "i8[] u1[] u1[] i8[] b1[] u8[] i8[] i8[]",
    },
    "dataaudit.textops._repetition_kernels": {
        "code_candidates": "u1[] i4[] i4[] u2[] i8[] b1[]",
        "continuation_counts": "u1[] i4[] i4[] i8[]",
        "count_newlines": "u1[] i8[] i8[]",
        "count_words": "u1[] i4[] i4[] i8[]",
        "gather_spans": "u1[] i4[] i4[] i8[] u1[]",
        "line_repeats": "u1[] i4[] i4[] i4[] i8[] i4[] i8[] f8[]",
        "list_items": "u1[] i4[] i4[] i4[] i4[] i8[] i8[]",
        "scan_lines": "u1[] i8[] i8[] u1[] f8 i8 i4[] i4[] i4[] i4[] i4[] i4[] i4[] u2[]",
        "sentence_runs": "i4[] u8[] i8[] i8 i8 i8[] i8[]",
        "split_sentences": "u1[] i4[] i4[] u1[] u1[] i8[] i8[] i8[] i8[] u8[]",
        "word_ngrams": "u1[] i4[] i4[] i8[] i8 i8 b1[] b1[] f8[][] f8[][] i8[] i8[]",
    },
    "dataaudit.textops._spacy_kernels": {
        "chunk_rows": "u1[] i8[] u2[] u8[] i8 i8[] i8[] i8 u8[] i8[] i8[] i8[] u8[] u8[] i8[] i8[] i8[] i8[] i8 i8[] "
                      "i8[] i8[] i8 i8[][] u1[]",
        "count_chunks": "i8[] u1[] u1[]",
        "count_lines": "i8[] u1[]",
        "fineweb_lines": "i8[] u1[] u1[] i8[] i8 i8[][]",
        "line_words": "i8[] u1[] u1[] i8[] i8[]",
        "split_chunks": "i8[] u1[] u1[] u1[] i8[] i8[] u1[]",
        "split_lines": "i8[] u1[] u1[] i8[] i8[]",
    },
}
_EXTENSIONS = {False: "_dataaudit_kernels", True: "_dataaudit_kernels_nrt"}   # with numba's reference counting?
_DONE = "build.json"                     # written last into the build folder, which is then renamed into place
KEEP_BUILDS = 4                          # this build and the newest others; a build is ~1.5 MB


def _parse(kinds: str) -> tuple[tuple[np.dtype, int], ...]:
    """(dtype, dimensions) per argument; 0 dimensions: a scalar."""
    return tuple((np.dtype(k.replace("[]", "")), k.count("[]")) for k in kinds.split())


def _fits(kind: tuple[np.dtype, int], value) -> bool:
    dtype, ndim = kind
    if ndim == 0:
        if dtype.kind == "i":
            return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
        if dtype.kind == "u":
            return type(value) is dtype.type
        return isinstance(value, (float, np.floating))
    if type(value) is not np.ndarray or value.dtype != dtype or value.ndim != ndim:
        return False
    f = value.flags
    return f.c_contiguous and f.aligned and f.writeable


# ------------------------------------------------------------------------------------------------ the key

def _cpu() -> str:
    """The CPU's model and instruction set flags (Linux), else what platform says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            first = f.read(1 << 16).split("\n\n", 1)[0]
        return "\n".join(line for line in first.splitlines() if line.startswith(("model name", "flags")))
    except OSError:
        return platform.processor()


@functools.cache
def key() -> str:
    """What a build is valid for: the kernels' sources (this folder's modules and the exported modules elsewhere:
    the kernels import only from here, a test checks it), Python, NumPy, the machine and its CPU."""
    h = hashlib.sha256()
    here = Path(__file__).parent
    root = here.parent.parent
    others = [root.joinpath(*m.split(".")).with_suffix(".py") for m in EXPORTS if not m.startswith(__package__ + ".")]
    for path in sorted(here.glob("*.py")) + sorted(others):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    h.update("\0".join((sys.version, np.__version__, platform.machine(), _cpu())).encode())
    return h.hexdigest()[:24]


def kernels_folder() -> Path:
    return cache_folder() / "kernels"


def _ext_path(folder: Path, nrt: bool) -> Path:
    return folder / (_EXTENSIONS[nrt] + sysconfig.get_config_var("EXT_SUFFIX"))


# -------------------------------------------------------------------------------------------------- build

def build() -> tuple[Path, bool]:
    """Compile the EXPORTS for the current key unless built already: (the build's folder, built now?). Raises
    RuntimeError with one line when it cannot (numba without pycc, no C compiler, an unwritable cache folder)."""
    dest = kernels_folder() / key()
    if (dest / _DONE).is_file():
        return dest, False
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".build-", dir=dest.parent))
    except OSError as exc:
        raise RuntimeError(f"cannot write {dest.parent}: {exc.strerror or exc}") from None
    try:
        t0 = time.perf_counter()
        exported = _compile(work)
        (work / _DONE).write_text(json.dumps({"seconds": round(time.perf_counter() - t0, 1), "kernels": exported},
                                             indent=1))
        try:
            os.replace(work, dest)
        except OSError:                   # another build finished first: its result is the same
            if not (dest / _DONE).is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _prune(dest)
    return dest, True


def _age(folder: Path) -> float:
    try:
        return time.time() - folder.stat().st_mtime
    except OSError:
        return 0.0


def _prune(dest: Path) -> None:
    """Keep the KEEP_BUILDS - 1 newest other builds (other environments sharing the cache folder: another NumPy,
    another checkout) and remove the older ones, and the folders of builds killed over a day ago."""
    others = sorted((p for p in dest.parent.iterdir() if p != dest and not p.name.startswith(".build-")), key=_age)
    killed = [p for p in dest.parent.glob(".build-*") if _age(p) > 86400]
    for old in others[KEEP_BUILDS - 1:] + killed:
        shutil.rmtree(old, ignore_errors=True)


def _pycc():
    """numba.pycc's CC made to compile as numba's JIT does, for this CPU's model and the instructions the CPU
    reports: pycc's "host" takes the model's name with every instruction of the model, which a virtual machine
    may not pass through, and its baseline ("") gave code up to 17% slower than the JIT's. (CC, numba's types,
    from_dtype)."""
    from numba.core import types
    from numba.core.codegen import AOTCPUCodegen
    from numba.core.compiler import Flags
    from numba.core.registry import cpu_target
    from numba.np.numpy_support import from_dtype
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                  # pycc is pending deprecation; it is all that builds this
        from numba.pycc import CC
        from numba.pycc import compiler as pycc_compiler
        from numba.pycc.compiler import ModuleCompiler

    class NoGilFlags(Flags):                             # the flags pycc compiles every export with
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.release_gil = True                      # the Python wrapper runs the kernel without the GIL

    class HostCodegen(AOTCPUCodegen):
        def _customize_tm_features(self):
            return self._get_host_cpu_features()         # the JIT's features (NUMBA_CPU_FEATURES included)

    class HostCC(CC):
        def _compile_object_files(self, build_dir):      # pycc's, with HostCodegen
            compiler = ModuleCompiler(self._export_entries, self._basename, self._use_nrt, cpu_name="host")
            compiler.context = cpu_target.target_context.subtarget(
                _internal_codegen=HostCodegen(self._basename, cpu_name="host"), aot_mode=True)
            compiler.external_init_function = self._init_function
            obj = os.path.join(build_dir, os.path.splitext(self._output_file)[0] + ".o")
            plain, pycc_compiler.Flags = pycc_compiler.Flags, NoGilFlags
            try:
                compiler.write_native_object(obj, wrap=True)
            finally:
                pycc_compiler.Flags = plain
            return [obj], compiler.dll_exports

    return HostCC, types, from_dtype


def _compile(out: Path) -> dict[str, list[str]]:
    """Both extensions into `out`; {module: [kernel, ...]} of what they hold."""
    try:
        CC, types, from_dtype = _pycc()
    except ImportError as exc:
        raise RuntimeError(f"numba's ahead-of-time compiler is not available: {exc}") from None
    ccs = {}
    for nrt, name in _EXTENSIONS.items():
        ccs[nrt] = CC(name)
        ccs[nrt].output_dir = str(out)
        ccs[nrt].use_nrt = nrt
        ccs[nrt].verbose = False
    exported: dict[str, list[str]] = {}
    for module, kernels in EXPORTS.items():
        mod = importlib.import_module(module)
        for name, kinds in kernels.items():
            disp = getattr(mod, name)
            if not disp.targetoptions.get("nogil"):      # its twin runs without the GIL: safe for nogil kernels only
                raise RuntimeError(f"{module}.{name} is not nogil: it cannot be exported")
            args = tuple(types.Array(from_dtype(dt), nd, "C") if nd else from_dtype(dt)
                         for dt, nd in _parse(kinds))
            disp.compile(args)                           # the JIT's types tell the return type
            ret = disp.overloads[args].signature.return_type
            ccs[bool(disp.targetoptions.get("_nrt", True))].export(name, ret(*args))(disp.py_func)
            exported.setdefault(module, []).append(name)
    for cc in ccs.values():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cc.compile()
        except Exception as exc:  # noqa: BLE001 - a missing compiler or linker surfaces as any error type
            raise RuntimeError(f"compiling {cc.name} failed: {type(exc).__name__}: {exc}") from None
    return exported


# --------------------------------------------------------------------------------------------------- load

_LOADED: dict[str, object] = {}          # module -> CompiledKernels or None; "": {nrt: extension} or None
# dedup signs batches on a thread per core: the first calls come at once, and a thread that saw the build half
# loaded would take numba's JIT kernels (and import numba) for the rest of the run
_LOAD_LOCK = threading.Lock()


class CompiledKernels:
    """A kernel module's exported kernels from the extensions, each falling back to numba's kernel for other
    arguments; any other name from numba's module."""

    def __init__(self, module: str, kernels: dict[str, object]):
        self._module = module
        for name, kinds in EXPORTS[module].items():
            setattr(self, name, _guarded(kernels[name], module, name, _parse(kinds)))

    def __getattr__(self, name: str):
        # (only names an instance lacks come here: "_module" itself, on an instance made without __init__ by copy or
        # pickle, and the special names those look up are no kernels; reading self._module for them recursed)
        if name == "_module" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(importlib.import_module(self._module), name)


def _guarded(fn, module: str, name: str, kinds):
    def kernel(*args):
        if len(args) == len(kinds) and all(map(_fits, kinds, args)):
            return fn(*args)
        return getattr(importlib.import_module(module), name)(*args)
    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"{module}.{name} compiled ahead of time (numba's JIT kernel for other argument types)."
    return kernel


def _extensions() -> dict[bool, object] | None:
    """The two extensions of the build for the sources now, loaded once; None without a complete build."""
    if "" not in _LOADED:
        _LOADED[""] = None
        folder = kernels_folder() / key()
        if (folder / _DONE).is_file():
            try:
                found = {}
                for nrt in _EXTENSIONS:
                    path = _ext_path(folder, nrt)
                    spec = importlib.util.spec_from_file_location(_EXTENSIONS[nrt], path)
                    found[nrt] = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(found[nrt])
                _LOADED[""] = found
            except (ImportError, OSError):      # a damaged build: numba's JIT, as without one
                pass
    return _LOADED[""]


def compiled_kernels(module: str) -> CompiledKernels | None:
    """`module`'s kernels compiled ahead of time, or None: not exported, not built for the sources now, or
    DATAAUDIT_NO_AOT set."""
    if module not in EXPORTS or os.environ.get(NO_AOT_ENV):
        return None
    if module not in _LOADED:
        with _LOAD_LOCK:
            if module not in _LOADED:
                found = {name: getattr(ext, name) for ext in (_extensions() or {}).values()
                         for name in EXPORTS[module] if hasattr(ext, name)}
                _LOADED[module] = CompiledKernels(module, found) if len(found) == len(EXPORTS[module]) else None
    return _LOADED[module]
