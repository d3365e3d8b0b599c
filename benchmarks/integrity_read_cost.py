#!/usr/bin/env python
"""What integrity by default costs: `dataaudit audit` with `--read all-columns` (the default: every column of
every Parquet row group decoded, as a training loader reads) vs `--read checked-columns` (only the columns the
checks read).

Two corpora: the text benchmark corpus (make_corpus.py: one `text` column, which the checks read, so both modes
decode the same bytes: the cost is that of the mode's bookkeeping alone), and the same documents with a wide
column no check reads beside them (`meta`: struct<url string, crawl_time timestamp[us], html string>, the html
being the document wrapped in tags, about as many bytes as the text: a web crawl's metadata). There the default
decodes about twice the bytes of the faster mode. Each audit runs as a child process
(`python -m dataaudit.cli audit CORPUS --out TMP --engine local --read MODE`, this checkout first on its
PYTHONPATH) under a small wrapper that reads its kernel peak RSS; the two modes alternate, best of --repeats
wall times. Printed per corpus: wall seconds, MB/s of text, peak RSS, the integrity read's share of the default
audit's wall time, (all - checked) / all (target <= 15% on the text corpus), and whether both modes reported the
same samples and flags.

    .venv/bin/python benchmarks/integrity_read_cost.py --mb 200
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

sys.path.insert(0, str(_common.REPO))   # the reader timed in this process is this checkout's, like the children's

import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from memory_scaling import run_measured  # noqa: E402

TARGET_SHARE = 0.15
MODES = ("all-columns", "checked-columns")
WIDE_VERSION = 1
META = pa.struct([("url", pa.string()), ("crawl_time", pa.timestamp("us")), ("html", pa.string())])


def _meta(text: pa.Array, first_row: int) -> pa.Array:
    """The wide unchecked column of a row group: url, crawl time and the document as html."""
    n = len(text)
    rows = pa.array(range(first_row, first_row + n), pa.int64())
    url = pc.binary_join_element_wise("https://example.org/page/", pc.cast(rows, pa.string()), "")
    crawl = pc.cast(pc.add(pc.multiply(rows, 1_000_003), 1_700_000_000_000_000), pa.timestamp("us"))
    html = pc.binary_join_element_wise("<html><body><p>", pc.replace_substring(text, "\n\n", "</p><p>"),
                                       "</p></body></html>", "")
    return pa.StructArray.from_arrays([url, crawl, html], fields=list(META))


def ensure_wide(manifest: dict, corpus: Path, wide: Path, log=print) -> list[Path]:
    """The corpus's shards with the `meta` column added (same row groups), in `wide`; reused when its stamp
    matches the source corpus."""
    stamp = {"version": WIDE_VERSION, "source": str(corpus), "params": manifest.get("params"),
             "shards": [s["file"] for s in manifest["shards"]]}
    stamp_path = wide / "wide.json"
    paths = [wide / Path(s["file"]).name for s in manifest["shards"]]
    if stamp_path.exists() and json.loads(stamp_path.read_text()) == stamp and all(p.exists() for p in paths):
        log(f"wide corpus: reusing {wide}")
        return paths
    shutil.rmtree(wide, ignore_errors=True)
    wide.mkdir(parents=True)
    for s, out in zip(manifest["shards"], paths):
        src = pq.ParquetFile(corpus / s["file"])
        schema = pa.schema([*src.schema_arrow, pa.field("meta", META)])
        first = 0
        with pq.ParquetWriter(out, schema, compression=src.metadata.row_group(0).column(0).compression.lower()) \
                as writer:
            for rg in range(src.num_row_groups):
                t = src.read_row_group(rg)
                meta = _meta(t.column("text").combine_chunks(), first)
                writer.write_table(t.append_column(schema.field("meta"), [meta]), row_group_size=t.num_rows)
                first += t.num_rows
    stamp_path.write_text(json.dumps(stamp))
    log(f"wide corpus: wrote {wide} ({sum(p.stat().st_size for p in paths) / 1e6:.1f} MB of Parquet files)")
    return paths


def _bytes_of(paths: list[Path], column: str) -> int:
    """Uncompressed bytes of one column in the files (from the footers)."""
    total = 0
    for p in paths:
        meta = pq.ParquetFile(p).metadata
        for rg in range(meta.num_row_groups):
            group = meta.row_group(rg)
            total += sum(group.column(c).total_uncompressed_size for c in range(group.num_columns)
                         if group.column(c).path_in_schema.split(".")[0] == column)
    return total


def _outcome(out: Path) -> dict:
    report = json.loads((out / "report.json").read_text())
    flags = pq.read_table(out / "flags.parquet", columns=["shard", "row", "check"])
    return {"samples": report["totals"]["samples"], "unreadable": report["totals"]["unreadable_shards"],
            "flags": flags.num_rows, "flag_digest": hash(tuple(map(tuple, flags.to_pydict().values()))),
            "not_decoded": sorted({c for s in report["shards"] for c in s["not_decoded"]}),
            "read": report["config"]["read"]}


def measure(name: str, paths: list[Path], work: Path, repeats: int, timeout: float) -> dict:
    runs = {m: [] for m in MODES}
    outcomes = {}
    for r in range(repeats):
        for mode in (MODES if r % 2 == 0 else tuple(reversed(MODES))):
            out = work / f"{name}-{mode}"
            shutil.rmtree(out, ignore_errors=True)
            cmd = _common.audit_cmd(paths, out) + ["--read", mode]
            res = run_measured(cmd, work / f"{name}-{mode}.log", 50.0, timeout)
            if res["rc"] not in (0, 1):
                print((work / f"{name}-{mode}.log").read_text(errors="replace")[-3000:], file=sys.stderr)
                raise RuntimeError(f"audit exited {res['rc']}: {' '.join(cmd)}")
            runs[mode].append(res)
            outcomes[mode] = _outcome(out)
            shutil.rmtree(out, ignore_errors=True)
    best = {m: min(runs[m], key=lambda x: x["wall_s"]) for m in MODES}
    return {"wall_s": {m: best[m]["wall_s"] for m in MODES},
            "all_wall_s": {m: [x["wall_s"] for x in runs[m]] for m in MODES},
            "peak_rss_bytes": {m: max(x["maxrss_bytes"] for x in runs[m]) for m in MODES},
            "outcomes": outcomes}


def reader_seconds(paths: list[Path], repeats: int) -> dict:
    """The reader alone, on one thread: draining iter_shard(columns=["text"]) with and without decode_all, best
    of `repeats` (the sides alternating): the CPU cost of the integrity read without the checks' noise."""
    import time

    from dataaudit.formats import iter_shard

    _common.single_core_libs()
    best = {m: float("inf") for m in MODES}
    for r in range(repeats):
        for mode in (MODES if r % 2 == 0 else tuple(reversed(MODES))):
            t0 = time.perf_counter()
            for p in paths:
                for _ in iter_shard(str(p), columns=["text"], decode_all=mode == "all-columns"):
                    pass
            best[mode] = min(best[mode], time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    ap = _common.base_parser(__doc__.split("\n\n")[0], default_mb=200.0)
    ap.add_argument("--repeats", type=int, default=3, help="best of this many audits per mode and corpus")
    ap.add_argument("--no-wide", action="store_true", help="only the text corpus")
    ap.add_argument("--work-dir", default=str(_common.REPO / "bench-data/tmp"),
                    help="where the audit --out folders and logs go (removed afterwards)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds before an audit run is killed")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--max-share", type=float, default=None,
                    help=f"exit 3 when the integrity read's share of the text corpus audit's wall time exceeds "
                         f"this (target {TARGET_SHARE:g}; off by default)")
    args = ap.parse_args(argv)
    return _common.run_guarded("integrity_read_cost", run, args)


def run(args) -> int:
    manifest = _common.ensure_corpus(args)
    corpus = Path(args.corpus)
    paths = [Path(p) for p in _common.shard_paths(manifest, args.corpus)]
    corpora = {"text": paths}
    if not args.no_wide:
        corpora["text + wide unchecked column"] = ensure_wide(manifest, corpus,
                                                              corpus.parent / (corpus.name + "-wide"))
    os.environ.update(_common.child_env())      # the children run this checkout's code
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="integrity-read-", dir=work))
    text_bytes = _bytes_of(paths, "text")
    print(_common.machine_line())
    print(f"dataaudit from: {_common.dataaudit_origin()}")
    print(f"corpus: {corpus}: {len(paths)} shards, {manifest['rows']:,} rows, {text_bytes / 1e6:.1f} MB text "
          f"(uncompressed pages); best of {args.repeats} per mode, modes alternating, page cache warm after the "
          "first run")
    results = {}
    try:
        for name, files in corpora.items():
            extra = _bytes_of(files, "meta")
            if extra:
                print(f"{name}: + {extra / 1e6:.1f} MB in `meta` (uncompressed pages), which no check reads")
            results[name] = measure(name.split()[0] + ("-wide" if extra else ""), files, tmp, max(args.repeats, 1),
                                    args.timeout)
            results[name]["extra_bytes"] = extra
        for name, files in corpora.items():       # after the audits: this pins this process's pools to 1 thread
            results[name]["reader_s"] = reader_seconds(files, max(args.repeats, 1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = []
    status = 0
    for name, res in results.items():
        t_all, t_checked = res["wall_s"]["all-columns"], res["wall_s"]["checked-columns"]
        share = (t_all - t_checked) / t_all
        res["share"] = share
        o_all, o_checked = res["outcomes"]["all-columns"], res["outcomes"]["checked-columns"]
        same = all(o_all[k] == o_checked[k] for k in ("samples", "unreadable", "flags", "flag_digest"))
        res["same_results"] = same
        for mode in MODES:
            t = res["wall_s"][mode]
            rows.append([f"{name}: --read {mode}", f"{t:.2f}", f"{text_bytes / 1e6 / t:.1f}",
                         f"{res['peak_rss_bytes'][mode] / 2**20:,.0f}",
                         ", ".join(res["outcomes"][mode]["not_decoded"]) or "-",
                         f"{share:+.1%}" if mode == "all-columns" else "", ("yes" if same else "NO")
                         if mode == "all-columns" else ""])
    print()
    print(_common.fmt_table(["audit", "wall s", "text MB/s", "peak RSS MiB", "not decoded",
                             "integrity share", "same results"], rows,
                            title="dataaudit audit --engine local, per read mode (integrity share = (all - checked) "
                                  "/ all wall time):"))
    print()
    print(_common.fmt_table(
        ["reader alone, 1 thread", "all-columns s", "checked-columns s", "extra s", "extra / audit wall"],
        [[name, f"{res['reader_s']['all-columns']:.2f}", f"{res['reader_s']['checked-columns']:.2f}",
          f"{res['reader_s']['all-columns'] - res['reader_s']['checked-columns']:+.2f}",
          f"{(res['reader_s']['all-columns'] - res['reader_s']['checked-columns']) / res['wall_s']['all-columns']:+.1%}"]
         for name, res in results.items()],
        title="the decoding alone (iter_shard(columns=['text']) drained, with and without decode_all; best of "
              f"{args.repeats}):"))
    text_share = results["text"]["share"]
    verdict = "meets" if text_share <= TARGET_SHARE else "ABOVE"
    print(f"integrity read on the text corpus: {text_share:+.1%} of the audit's wall time ({verdict} the "
          f"<= {TARGET_SHARE:.0%} target)")
    for name, res in results.items():
        if name != "text":
            print(f"{name}: {res['share']:+.1%} of the audit's wall time, "
                  f"{res['extra_bytes'] / 1e6:.0f} MB more decoded")
    if not all(res["same_results"] for res in results.values()):
        print("integrity_read_cost: the two modes reported different samples or flags on a readable corpus",
              file=sys.stderr)
        status = 1
    if args.max_share is not None and text_share > args.max_share:
        print(f"integrity_read_cost: share {text_share:.1%} > --max-share {args.max_share:.1%}", file=sys.stderr)
        status = status or 3
    _common.write_json_result(args.json, {"text_bytes": text_bytes, "rows": manifest["rows"], "results": results})
    return status


if __name__ == "__main__":
    sys.exit(main())
