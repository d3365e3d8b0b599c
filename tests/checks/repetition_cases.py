"""Synthetic texts for the `repetition` check: structured text that repeats lines and words by nature (code,
tables, lists, JSON) and must not be flagged, and degenerate generations (a model looping on one sentence or
line) that must be.

Shared by tests/checks/test_repetition.py and the measurement script (`python -m tests.checks.repetition_cases`
prints the flags of each case, the false-positive counts on the real corpora in ../shared/data before and after,
and the throughput).
"""
from __future__ import annotations

import json
import re
import time

PYTHON_FILE = '''"""Small geometry helpers used by the renderer."""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class Point:
    x: float
    y: float

    def __add__(self, other: "Point") -> "Point":
        return Point(self.x + other.x, self.y + other.y)

    def __sub__(self, other: "Point") -> "Point":
        return Point(self.x - other.x, self.y - other.y)

    def norm(self) -> float:
        return math.hypot(self.x, self.y)


class Shape:
    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def area(self) -> float:
        raise NotImplementedError

    @property
    def perimeter(self) -> float:
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.name}: area={self.area:.2f}, perimeter={self.perimeter:.2f}"


class Circle(Shape):
    def __init__(self, center: Point, radius: float) -> None:
        super().__init__("circle")
        self.center = center
        self.radius = radius

    @property
    def area(self) -> float:
        return math.pi * self.radius ** 2

    @property
    def perimeter(self) -> float:
        return 2 * math.pi * self.radius


class Rectangle(Shape):
    def __init__(self, origin: Point, width: float, height: float) -> None:
        super().__init__("rectangle")
        self.origin = origin
        self.width = width
        self.height = height

    @property
    def area(self) -> float:
        return self.width * self.height

    @property
    def perimeter(self) -> float:
        return 2 * (self.width + self.height)


class Square(Rectangle):
    def __init__(self, origin: Point, side: float) -> None:
        super().__init__(origin, side, side)
        self.name = "square"


def total_area(shapes: list[Shape]) -> float:
    total = 0.0
    for shape in shapes:
        total += shape.area
    return total


def largest(shapes: list[Shape]) -> Shape | None:
    best = None
    for shape in shapes:
        if best is None or shape.area > best.area:
            best = shape
    return best


if __name__ == "__main__":
    shapes = [Circle(Point(0, 0), 1.0), Rectangle(Point(1, 1), 2.0, 3.0), Square(Point(2, 2), 1.5)]
    for shape in shapes:
        print(shape.describe())
    print(f"total area: {total_area(shapes):.2f}")
'''

C_FILE = '''#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int *data;
    size_t len;
    size_t cap;
} vec_t;

static int vec_init(vec_t *v, size_t cap) {
    v->data = malloc(cap * sizeof *v->data);
    if (!v->data) {
        return -1;
    }
    v->len = 0;
    v->cap = cap;
    return 0;
}

static int vec_push(vec_t *v, int x) {
    if (v->len == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        int *p = realloc(v->data, cap * sizeof *p);
        if (!p) {
            return -1;
        }
        v->data = p;
        v->cap = cap;
    }
    v->data[v->len++] = x;
    return 0;
}

static void vec_free(vec_t *v) {
    free(v->data);
    v->data = NULL;
    v->len = v->cap = 0;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a;
    int y = *(const int *)b;
    if (x < y) {
        return -1;
    }
    if (x > y) {
        return 1;
    }
    return 0;
}

int main(void) {
    vec_t v;
    if (vec_init(&v, 4) != 0) {
        return 1;
    }
    for (int i = 0; i < 100; i++) {
        if (vec_push(&v, (i * 37) % 101) != 0) {
            vec_free(&v);
            return 1;
        }
    }
    qsort(v.data, v.len, sizeof *v.data, cmp_int);
    for (size_t i = 0; i < v.len; i++) {
        printf("%d\\n", v.data[i]);
    }
    vec_free(&v);
    return 0;
}
'''

_REGIONS = ("north", "south", "east", "west", "central")
MARKDOWN_TABLE = "Quarterly sales by region (units):\n\n| Region | Quarter | Product | Units | Status |\n" \
    "|---|---|---|---|---|\n" + "".join(
        f"| {_REGIONS[i % 5]} | Q{i % 4 + 1} | {'widget' if i % 2 else 'gadget'} | {100 + 17 * i} | "
        f"{'ok' if i % 3 else 'pending'} |\n" for i in range(20)) + "\nTotals are computed at the end of each quarter."

_CHORES = ("water the plants", "take out the recycling", "call the plumber", "pay the electricity bill",
           "buy coffee beans", "book the dentist", "renew the library card", "fix the bike tyre",
           "clean the gutters", "send the invoice", "back up the laptop", "order printer ink",
           "reply to the landlord", "wash the car", "return the parcel")
BULLET_LIST = "Things to do this week:\n" + "".join(
    f"- Step {i + 1}: {'Remember to ' if i % 2 else 'Please '}{_CHORES[i % 15]} before {('Monday', 'Friday')[i % 2]}.\n"
    for i in range(30))
NUMBERED_LIST = "Setup instructions:\n" + "".join(
    f"{i + 1}. Run the command for step {i + 1} and check the output of step {i + 1}.\n" for i in range(30))

JSON_TEXT = json.dumps({"type": "object", "properties": {
    f"field_{i}": {"type": "string" if i % 2 else "integer", "description": f"The value of field {i}",
                   "required": True, "nullable": False} for i in range(15)}}, indent=2)

FENCED_ANSWER = ("Here is how to sum the values in each row:\n\n```python\n" + "\n".join(PYTHON_FILE.splitlines()[:60])
                 + "\n```\n\nThe function `total_area` adds the area of every shape, and `largest` returns the "
                   "shape with the biggest area.")

YAML_CONFIG = "\n".join(["# service definitions", "services:"] + [
    line for i, name in enumerate(("api", "worker", "scheduler", "cache"))
    for line in (f"  {name}:", f"    image: registry.example.com/{name}:1.{i}", "    restart: always",
                 "    replicas: 2", "    environment:", "      LOG_LEVEL: info", f"      PORT: {8000 + i}")])

API_DOCS = "\n\n".join(
    f"### `{name}`\n\n{desc}\n\n#### Parameters\n\n- `{arg}`: {argdesc}\n\n#### Returns\n\n{ret}"
    for name, desc, arg, argdesc, ret in (
        ("load", "Read a shard from disk and decode every record in it.", "path", "where the shard lives",
         "The decoded records as an Arrow table."),
        ("audit", "Run every configured check on one batch of records.", "batch", "an Arrow record batch",
         "One flag and one value per record and check."),
        ("report", "Write the findings of a run as JSON and HTML files.", "out", "the output folder",
         "The path of the JSON report that was written."),
        ("merge", "Fold the summaries of several shards into one total.", "parts", "the shard summaries",
         "The merged summary, ready to be rendered.")))

# Structured text: none may be flagged.
STRUCTURED = {
    "python_file": PYTHON_FILE,
    "c_file": C_FILE,
    "markdown_table": MARKDOWN_TABLE,
    "bullet_list": BULLET_LIST,
    "numbered_list": NUMBERED_LIST,
    "json": JSON_TEXT,
    "fenced_code_answer": FENCED_ANSWER,
    "yaml_config": YAML_CONFIG,
    "api_docs": API_DOCS,
}

# Degenerate generations: each must be flagged.
DEGENERATE = {
    "sorry_x8": "I'm sorry. " * 8,                                          # 16 words: only the sentence run
    "sentence_x8": "I'm sorry, but I cannot help with that request. " * 8,
    "line_x10": "Here is the answer to your question.\n" * 10,
    "chinese_sentence_x6": "对不起，我无法回答这个问题。" * 6,
    "alternating_x6": "I cannot do that. I am really sorry. " * 6,
    "list_item_x8": "Before you start:\n" + "- Check the error log first.\n" * 8,
    "looping_tail": ("The capital of France is Paris, which is also its largest city. "
                     + "Paris is known for the Eiffel Tower. " * 7),
    "identical_lines_x20": "\n".join(["Click here to subscribe to our newsletter!"] * 20),
    "repeated_5gram_x15": "buy cheap watches online now " * 15,
}


# --------------------------------------------------------------------------------------- real-corpus loaders

def real_corpora(data) -> dict[str, list[str]]:
    """The real texts the false-positive counts are measured on, by corpus."""
    gsm = [json.loads(line) for line in (data / "benchmarks" / "gsm8k_test.jsonl").read_text().splitlines()
           if line.strip()]
    glaive = json.loads((data / "chat" / "glaive_toolcall_zh_demo.json").read_text(encoding="utf-8"))
    sft = [json.loads(line) for line in (data / "chat" / "v1_sft_demo.jsonl").read_text().splitlines()
           if line.strip()]
    raw = (data / "corpora" / "tinyshakespeare.txt").read_text(encoding="utf-8")
    return {
        "gsm8k question+answer": [r["question"] for r in gsm] + [r["answer"] for r in gsm],
        "glaive conversations[].value": [t["value"] for r in glaive for t in r["conversations"]],
        "glaive tools (JSON)": [r["tools"] for r in glaive],
        "v1_sft turns": [p["value"] for r in sft for m in r["messages"] for p in m["content"]],
        "tinyshakespeare 2000-char chunks": shakespeare_chunks(raw, 2000),
    }


def shakespeare_chunks(raw: str, size: int) -> list[str]:
    """`raw` cut into pieces of about `size` characters at paragraph breaks."""
    out, cur = [], ""
    for para in re.split(r"\n[ \t]*\n", raw):
        cur = f"{cur}\n\n{para}" if cur else para
        if len(cur) >= size:
            out.append(cur)
            cur = ""
    if cur:
        out.append(cur)
    return out


def main() -> None:
    """Flags of the synthetic cases, false-positive counts on the real corpora (now, and with the plain Gopher
    statistics of datatrove, which is what the check computed before structure and sentence runs), and the
    throughput on ~11 MB of text (tinyshakespeare x10 in 2000-character pieces, one thread, CPU time)."""
    import pyarrow as pa

    from dataaudit.checks import REGISTRY
    from tests.paths import SHARED_DATA

    pa.set_cpu_count(1)
    spec = REGISTRY["repetition"]
    gopher_only = {**spec.params, "skip_structure": False, "max_repeats": 0, "min_words": 0}
    for group in (STRUCTURED, DEGENERATE):
        out = spec.fn(pa.array(list(group.values())), **spec.params)
        old = spec.fn(pa.array(list(group.values())), **gopher_only)
        for i, key in enumerate(group):
            d = out.detail[i] if out.detail is not None and out.flagged[i] else ""
            print(f"  {key:22s} flagged={bool(out.flagged[i])!s:5s} (Gopher only: {bool(old.flagged[i])!s:5s}) "
                  f"value={out.value[i]:.2f} {d}")
    for label, docs in real_corpora(SHARED_DATA).items():
        arr = pa.array(docs, type=pa.string())
        now = int(spec.fn(arr, **spec.params).flagged.sum())
        before = int(spec.fn(arr, **gopher_only).flagged.sum())
        tokens = int(REGISTRY["special_tokens"].fn(arr, **REGISTRY["special_tokens"].params).flagged.sum())
        print(f"{label}: {len(docs)} texts, {sum(map(len, docs)):,} chars: repetition {before} -> {now}, "
              f"special_tokens {tokens}")
    raw = (SHARED_DATA / "corpora" / "tinyshakespeare.txt").read_text(encoding="utf-8")
    docs = shakespeare_chunks(raw, 2000) * 10
    arr = pa.array(docs, type=pa.string())
    mb = sum(len(s.encode()) for s in docs) / 1e6
    for name, params in (("repetition", spec.params), ("repetition (Gopher only)", gopher_only),
                         ("special_tokens", REGISTRY["special_tokens"].params)):
        best = float("inf")
        for _ in range(5):
            t0 = time.process_time()
            REGISTRY[name.split()[0]].fn(arr, **params)
            best = min(best, time.process_time() - t0)
        print(f"{name}: {mb:.1f} MB in {best:.2f} s CPU = {mb / best:.1f} MB/s (best of 5)")


if __name__ == "__main__":
    main()
