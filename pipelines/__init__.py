"""Orchestration of the jobs over many shards; the only package that imports Ray.

    job            JobRun: the one job skeleton (stale temporaries, engine, units, progress, the `run` record)
    engine         EngineOptions (engine, Ray address, workers, unreadable-shard policy); local or Ray for an input
    ray_session    starting or joining Ray
    tasks          one function over many items, in this process, local worker processes or Ray tasks
    lanes          the local engine's worker processes (started early when a command knows it needs them)
    runner         run_units, the shard runner: resume from parts, progress, the unreadable-shard policy
    parts          per-shard partial results (PartStore)
    run_record     the `run` section of a report
    audit, dedup, image_dedup, contamination, clean: each job's shards, stage and merge; the model of its report, its
    exit rule and its output names live in its command's package (dataaudit.<command>)
"""
