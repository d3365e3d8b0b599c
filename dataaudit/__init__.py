"""dataaudit: find the bad data that wrecks LLM/VLM training runs."""
__version__ = "0.1.0"


def _checkout_pipelines() -> None:
    """`dataaudit.pipelines` from a source checkout. The jobs live in the checkout's top-level `pipelines/` folder,
    which the wheel installs as `dataaudit/pipelines/` (pyproject's package-dir); run from a checkout on sys.path,
    that folder is mapped here (no code runs: its modules load when imported)."""
    import os
    import sys
    from importlib.util import module_from_spec, spec_from_file_location

    here = os.path.dirname(os.path.abspath(__file__))
    folder = os.path.join(os.path.dirname(here), "pipelines")
    init = os.path.join(folder, "__init__.py")
    installed = os.path.isdir(os.path.join(here, "pipelines"))
    if installed or "dataaudit.pipelines" in sys.modules or not os.path.isfile(init):
        return
    spec = spec_from_file_location("dataaudit.pipelines", init, submodule_search_locations=[folder])
    module = module_from_spec(spec)
    sys.modules["dataaudit.pipelines"] = module
    spec.loader.exec_module(module)
    globals()["pipelines"] = module


_checkout_pipelines()
