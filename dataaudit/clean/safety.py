"""When `clean` refuses to write anything, and where each cleaned shard goes.

Refused (CleanRefused, one line): a shard the audit did not read, or read only in part (unless skipped), or that
changed since (size, modification time, xxh3-128 of every byte, as report.json recorded them; for an object in a
store that names its versions, its size and version: ETag, generation, ...); dedup or contamination findings that do
not cover a shard, or that read other bytes than the audit (their fingerprint); an
--out folder that is an input folder or inside one; an output path that would be an input or inside the job's own
folder (STATE, in --out).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from dataaudit.clean import STATE
from dataaudit.errors import DataAuditError
from dataaudit.io import absolute, common_parent, inside, is_dir, join, parent, relative, resolved
from dataaudit.sources.fingerprint import changed, content_key


class CleanRefused(DataAuditError):
    """A reason not to clean; the message is one line naming the file."""

    prefix = "refused: "


_real = resolved    # one spelling per file: links resolved, a URI normalized


def by_path(shards: list[dict]) -> dict[str, dict]:
    """A report's shard entries by resolved path."""
    return {_real(s["path"]): s for s in shards}


def audited(paths: list[str], report: dict, skip_unreadable: bool) -> tuple[list[str], list[dict]]:
    """The shards to clean and the ones left out ([{path, reason}]); refuses a shard the audit did not read whole
    (unless `skip_unreadable`) or that changed since the audit."""
    entries = by_path(report.get("shards", []))
    keep, skipped = [], []
    for p in paths:
        s = entries.get(_real(p))
        if s is None:
            raise CleanRefused(f"{p}: not in the audit's report (audit it first, or leave it out)")
        if s.get("status") != "ok":
            why = f"the audit could not read it to the end ({s.get('error')})"
            if not skip_unreadable:
                raise CleanRefused(f"{p}: {why}; --skip-unreadable leaves it out")
            skipped.append({"path": p, "reason": why})
            continue
        if not s.get("fingerprint"):
            raise CleanRefused(f"{p}: the audit recorded no fingerprint of it (an older audit): audit it again")
        keep.append(p)
    with ThreadPoolExecutor(max_workers=min(8, len(keep) or 1)) as pool:   # xxh3 releases the GIL
        why = list(pool.map(lambda p: changed(p, entries[_real(p)]["fingerprint"]), keep))
    for p, w in zip(keep, why):
        if w is not None:
            raise CleanRefused(f"{p}: changed since the audit ({w}): audit it again before cleaning")
    return keep, skipped


def covered(paths: list[str], shards: list[dict], counts: list[int], what: str, count_key: str,
            fingerprints: list[dict]) -> None:
    """Refuse a shard that dedup or contamination findings (`shards`: their report's entries) do not cover, saw
    with another number of records than the audit, or saw as other bytes than the audit did (`fingerprints`: the
    audit's, checked against the files already): rows of another file are other records, whatever their count."""
    entries = by_path(shards)
    for p, n, fp in zip(paths, counts, fingerprints):
        s = entries.get(_real(p))
        if s is None:
            raise CleanRefused(f"{p}: not among the {what} job's shards: its findings do not cover it")
        if s.get("status") != "ok":
            raise CleanRefused(f"{p}: the {what} job could not read it to the end ({s.get('error')})")
        if s.get(count_key) != n:
            raise CleanRefused(f"{p}: the {what} job read {s.get(count_key)} records, the audit {n}: "
                               "the findings describe different files")
        theirs = s.get("fingerprint")
        if not theirs:
            raise CleanRefused(f"{p}: the {what} job recorded no fingerprint of it (an older version): run it again")
        mine, their_key = content_key(fp), content_key(theirs)
        if their_key is None or mine is None or their_key[0] != mine[0]:   # a hash against an object version
            raise CleanRefused(f"{p}: the {what} job and the audit recorded the file in different ways (a version "
                               "of dataaudit before the other): run them again on this file")
        if their_key != mine:
            raise CleanRefused(f"{p}: the {what} job read other bytes than the audit (the shard changed between "
                               "them): run it again on this file")


def output_paths(paths: list[str], out: Path | str) -> list[str]:
    """OUT/<path relative to the inputs' common parent folder>, one per shard (local paths or URIs alike)."""
    full = [absolute(p) for p in paths]
    try:
        top = common_parent(full)
        return [join(out, relative(a, top)) for a in full]
    except ValueError:
        raise CleanRefused(f"{paths[0]}: the shards are on different filesystems or buckets: clean each "
                           "filesystem's shards separately") from None


def check_outputs(paths: list[str], args: list[str], out: Path | str, outputs: list[str],
                  findings: list[Path | str]) -> None:
    """Refuse an --out folder that is (or is inside) an input folder or a findings folder, and an output path
    that would be an input or one of clean's own files."""
    out_s = {absolute(out), _real(out)}
    folders = {f for p in paths for f in (parent(absolute(p)), parent(_real(p)))}
    folders |= {f for a in args if is_dir(a) for f in (absolute(a), _real(a))}
    for o in out_s:
        for f in sorted(folders):
            if inside(o, f):
                raise CleanRefused(f"{out}: --out is {'an input folder' if o == f else 'inside the input folder ' + f}"
                                   ": cleaned shards must not mix with their inputs")
        for f in findings:
            if o in (absolute(f), _real(f)):
                raise CleanRefused(f"{out}: --out is the findings folder {f}")
    inputs = {_real(p) for p in paths}
    state = _real(join(out, STATE))
    for p, o in zip(paths, outputs):
        r = _real(o)
        if r in inputs:
            raise CleanRefused(f"{o}: this output would overwrite an input")
        if inside(r, state):
            raise CleanRefused(f"{p}: its output {o} would be inside clean's own folder {STATE}/: move the shard "
                               "or clean it separately")
    seen: dict[str, str] = {}
    for p, o in zip(paths, outputs):
        if _real(o) in seen:
            raise CleanRefused(f"{p}: its output {o} is also the output of {seen[_real(o)]}")
        seen[_real(o)] = p
