"""The start-up an audit worker's first shard would otherwise pay (about 0.2-0.4 s on top of the stage's own
imports), paid instead while the command itself starts: `pipelines.lanes.early_lanes` runs it in each worker.
Imported by the command before its heavy imports, so it imports nothing at module level."""

# The text kernels the default checks call (one library when built ahead of time, else numba's JIT modules).
TEXT_KERNELS = ("dataaudit.textops._kernels", "dataaudit.textops._codepoint_kernels", "dataaudit.textops._prefilter_kernels",
                "dataaudit.textops._literal_kernels", "dataaudit.textops._repetition_kernels")


def warm_up() -> None:
    """Import the stage and what its first shard imports lazily, and load the text kernels.
    tests/core/test_startup_imports.py checks that a text shard then imports nothing more."""
    import numpy.ma  # noqa: F401  (the length statistics)
    import pyarrow.acero  # noqa: F401  (the shard summary's aggregations)
    import pyarrow.dataset  # noqa: F401  (the Parquet reader's fragments; it imports pandas when installed)

    import dataaudit.audit.pieces  # noqa: F401  (a large Parquet shard's pieces: what they tell the merge)
    import dataaudit.audit.shard  # noqa: F401  (the stage and every check)
    import dataaudit.dataset_info  # noqa: F401  (the shard's fields)
    import dataaudit.profiles  # noqa: F401
    from dataaudit.checks.secrets import detectors
    from dataaudit.textops.hashing import numba_kernels

    for module in TEXT_KERNELS:
        numba_kernels(module)
    detectors()   # detect-secrets' plugins (and the requests they import); last: the `secrets` extra may be missing
