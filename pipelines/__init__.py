"""Orchestration of the jobs over many shards; the only package that imports Ray.

    engine         local or Ray, for this input
    ray_session    starting or joining Ray
    tasks          one function over many items, in this process or as Ray tasks (the workers cap)
    runner         run_units, the shard runner: resume from parts, progress, the unreadable-shard policy
    parts          per-shard partial results (PartStore)
    run_record     the `run` section of a report
    audit, dedup, contamination: each job's shards, stages and merge
"""
