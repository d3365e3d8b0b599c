#!/usr/bin/env python
"""Regenerates dataaudit/textops/spacy_en.json: the tables dataaudit's exact emulation of spaCy's English word
tokenizer (dataaudit.textops.spacy_en) and datatrove's quality filters read.

Reads them from spaCy and datatrove installed in .bench-deps/ (benchmarks/setup_bench.sh); neither is a project
dependency, so the tables are committed:
  patterns       spaCy English prefix / suffix / infix / URL regexes (Python `re`), `spacy.blank("en")`
  rules          its special cases (tokenizer exceptions): text -> the ORTH of each token
  matcher_keys   the special cases spaCy also looks for across tokens (its PhraseMatcher: those holding an affix)
  punct_chars    the Sentencizer's sentence-ending characters (datatrove adds a Sentencizer to split sentences)
  punctuation    datatrove.utils.text.PUNCTUATION_SET (Gopher's "symbol words")
  terminal       datatrove.utils.text.TERMINAL_PUNCTUATION (FineWeb's line-ending characters)
spaCy (MIT) and datatrove (Apache-2.0) are the sources of these tables.

    .venv/bin/python benchmarks/dump_spacy_en.py
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "dataaudit" / "textops" / "spacy_en.json"


def main() -> int:
    sys.path.insert(0, os.environ.get("BENCH_DEPS", str(REPO / ".bench-deps")))
    from importlib.metadata import version
    import spacy
    from spacy.symbols import ORTH
    from datatrove.utils.text import PUNCTUATION_SET, TERMINAL_PUNCTUATION

    nlp = spacy.blank("en")
    tok = nlp.tokenizer
    patterns = {k: f.__self__.pattern for k, f in (("prefix", tok.prefix_search), ("suffix", tok.suffix_search),
                                                    ("infix", tok.infix_finditer), ("url", tok.url_match))}
    flags = {f.__self__.flags for f in (tok.prefix_search, tok.suffix_search, tok.infix_finditer, tok.url_match)}
    assert flags == {32}, flags                      # re.UNICODE only: the emulation compiles them so
    assert tok.token_match is None and tok.faster_heuristics
    rules = {k: [d.get(ORTH, d.get("ORTH")) for d in v] for k, v in tok.rules.items()}
    matcher = sorted(k for k in rules if tok.find_prefix(k) or tok.find_infix(k) or tok.find_suffix(k) or " " in k)
    nlp.add_pipe("sentencizer")
    data = {"spacy": spacy.__version__, "datatrove": version("datatrove"),
            "patterns": patterns, "rules": rules, "matcher_keys": matcher,
            "punct_chars": sorted(nlp.get_pipe("sentencizer").punct_chars),
            "punctuation": sorted(PUNCTUATION_SET), "terminal": sorted(TERMINAL_PUNCTUATION)}
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUT} (spaCy {spacy.__version__}, {len(rules)} special cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
