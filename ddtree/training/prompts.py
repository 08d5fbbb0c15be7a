"""Training and held-out prompts from offline material: Python standard-library docstrings turned into coding and
explanation requests, hand-written instruction templates over topic and task lists, and the general-chat material
of ddtree.training.chat. Every prompt records its kind, its group ("code" or "chat") and its source.

Deterministic for a given Python version (docstrings differ between versions), so the result is committed as
ddtree/training/data/prompts.json; rebuild it with `python -m ddtree.training.prompts`. A prompt already in the
committed file keeps its side of the split (shipped drafters trained on the train side, and a drafter started
from them must never be measured on it); only new prompts are split.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import json
import random
import re
import sys
import warnings
from pathlib import Path

from ddtree.files import atomic_write
from ddtree.training.chat import chat_prompts

PROMPTS_FILE = Path(__file__).resolve().parent / "data" / "prompts.json"

# Modules that are safe to import (no side effects, no GUI) and rich in documented public functions.
STDLIB_MODULES = (
    "abc", "argparse", "array", "ast", "base64", "binascii", "bisect", "builtins", "bz2", "calendar", "cmath",
    "codecs", "collections", "colorsys", "concurrent.futures", "configparser", "contextlib", "contextvars", "copy",
    "csv", "dataclasses", "datetime", "decimal", "difflib", "dis", "email.message", "email.utils", "enum", "errno",
    "filecmp", "fileinput", "fnmatch", "fractions", "functools", "gc", "getpass", "gettext", "glob", "graphlib",
    "gzip", "hashlib", "heapq", "hmac", "html", "html.parser", "http.client", "importlib", "inspect", "io",
    "ipaddress", "itertools", "json", "keyword", "locale", "logging", "lzma", "math", "mimetypes", "numbers",
    "operator", "os", "os.path", "pathlib", "pickle", "platform", "pprint", "queue", "random", "re", "reprlib",
    "sched", "secrets", "select", "selectors", "shelve", "shlex", "shutil", "signal", "socket", "sqlite3", "stat",
    "statistics", "string", "struct", "subprocess", "sys", "tarfile", "tempfile", "textwrap", "threading", "time",
    "timeit", "tokenize", "traceback", "types", "typing", "unicodedata", "unittest", "urllib.parse",
    "urllib.request", "uuid", "warnings", "wave", "weakref", "xml.etree.ElementTree", "zipfile", "zlib",
)
BUILTIN_TYPES = ("str", "bytes", "list", "dict", "set", "frozenset", "tuple", "int", "float", "complex",
                 "bytearray", "range", "memoryview")
MAX_DOC_CHARS = 400
CODE_KINDS = ("stdlib", "coding", "completion", "magpie-code")  # every other kind is general chat
GROUPS = ("code", "chat")
SPLITS = ("train", "heldout", "unseen")  # the file's two sides, in load_prompts' order; then a part of the second
# a templated prompt's source: "template:<template> x <subject>[ + <suffix>]" (here and in ddtree.training.chat.fill)
TEMPLATED_SOURCE = re.compile(r"template:\S+ x (.+?)(?: \+ SUFFIXES\[.*)?")

DOC_TEMPLATES = (
    "Explain what `{name}` does in Python and show a short example.",
    "What does `{name}` return? Give an example.",
    "Write a short Python example that uses `{name}` and explain each line.",
    "Here is the documentation of `{name}`:\n\n{doc}\n\nSummarize it in plain words for a beginner.",
    "Here is the documentation of `{name}`:\n\n{doc}\n\nWrite a Python function that uses it in a realistic task.",
    "Write a Python function that does the following, without using `{name}`: {summary}",
    "Write a unit test with `unittest` for `{name}`.",
    "What are common mistakes when using `{name}`, and how can I avoid them?",
    "When should I use `{name}` in Python? Compare it with an alternative.",
    "Documentation:\n{doc}\n\nWhich Python function is this, and how do I call it?",
    "I am reading code that calls `{name}`. What is it for?",
    "Show how to use `{name}` in a small command-line script.",
)

TOPICS = (
    "photosynthesis", "the water cycle", "black holes", "plate tectonics", "the French Revolution", "the Roman Empire",
    "the printing press", "vaccines", "climate change", "the human heart", "DNA", "gravity", "electricity",
    "magnetism", "volcanoes", "earthquakes", "the Moon", "the solar system", "rainbows", "the immune system",
    "the Industrial Revolution", "ancient Egypt", "the Renaissance", "World War I", "the Cold War", "democracy",
    "inflation", "supply and demand", "compound interest", "budgeting", "renewable energy", "solar panels",
    "wind turbines", "nuclear power", "recycling", "the ocean tides", "coral reefs", "rainforests", "deserts",
    "honeybees", "dinosaurs", "evolution", "the periodic table", "chemical reactions", "acids and bases",
    "the speed of light", "sound waves", "the internet", "email", "cloud computing", "encryption", "passwords",
    "machine learning", "neural networks", "databases", "operating systems", "compilers", "open source software",
    "version control with git", "unit testing", "recursion", "binary numbers", "sorting algorithms",
    "hash tables", "linked lists", "binary search", "big-O notation", "object-oriented programming",
    "functional programming", "regular expressions", "HTTP", "JSON", "SQL", "APIs", "the command line",
    "sleep", "exercise", "healthy eating", "meditation", "time management", "public speaking", "learning a language",
    "writing a resume", "job interviews", "teamwork", "leadership", "critical thinking", "the scientific method",
    "statistics", "probability", "prime numbers", "fractions", "geometry", "the Pythagorean theorem", "calculus",
    "logarithms", "music theory", "jazz", "painting", "photography", "chess", "football", "the Olympic Games",
    "coffee", "tea", "bread baking", "gardening", "composting", "cats", "dogs", "birds migrating", "whales",
    "the Great Wall of China", "the pyramids", "Mount Everest", "the Amazon river", "the Sahara", "Antarctica",
    "Shakespeare", "poetry", "novels", "fairy tales", "libraries", "museums", "trains", "airplanes", "bicycles",
    "electric cars", "rockets", "satellites", "the Mars rovers", "telescopes", "microscopes", "batteries",
    "smartphones", "3D printing", "robots", "friendship", "kindness", "saving money", "moving to a new city",
)

TOPIC_TEMPLATES = (
    "Explain {topic} to a ten-year-old.", "What is {topic}?", "Give me three interesting facts about {topic}.",
    "Write a short paragraph about {topic}.", "Write a short poem about {topic}.",
    "Summarize {topic} in five bullet points.",
    "What are the main advantages and disadvantages of {topic}?", "Write a haiku about {topic}.",
    "Describe {topic} in simple terms.", "Why is {topic} important?", "Write a short story that involves {topic}.",
    "What are common misconceptions about {topic}?", "Create a quiz with three questions about {topic}.",
    "How would you teach {topic} to a beginner?", "Write a tweet about {topic}.",
    "Compare {topic} and {other}.", "What is the history of {topic}?", "List five key terms related to {topic} "
    "and define each.", "Write an introduction for an essay about {topic}.", "Give me a fun fact about {topic}.",
    "What questions do people often ask about {topic}? Answer two of them.", "Explain {topic} in one sentence.",
    "Write a dialogue between a teacher and a student about {topic}.", "What should everyone know about {topic}?",
    "Describe a day in the life of someone who works with {topic}.", "Write a product description inspired by {topic}.",
    "How has {topic} changed over the last hundred years?", "Give me a study plan to learn about {topic} in a week.",
    "Write a limerick about {topic}.", "What would the world be like without {topic}?",
)

CODING_TASKS = (
    "reverses a string", "checks whether a string is a palindrome", "counts the vowels in a string",
    "returns the n-th Fibonacci number", "computes the factorial of a number", "checks whether a number is prime",
    "finds all prime numbers below n", "sorts a list with bubble sort", "implements binary search",
    "merges two sorted lists", "removes duplicates from a list while keeping the order", "flattens a nested list",
    "counts word frequencies in a text", "finds the longest word in a sentence", "converts Celsius to Fahrenheit",
    "computes the greatest common divisor of two numbers", "checks whether two strings are anagrams",
    "returns the second largest number in a list", "rotates a list by k positions", "transposes a matrix",
    "multiplies two matrices", "reads a CSV file and prints its rows", "writes a dictionary to a JSON file",
    "validates an email address with a regular expression", "generates a random password",
    "implements a stack class", "implements a queue with two stacks", "reverses a linked list",
    "computes the depth of a binary tree", "performs a breadth-first search on a graph",
    "performs a depth-first search on a graph", "finds the shortest path with Dijkstra's algorithm",
    "implements FizzBuzz", "converts a decimal number to binary", "converts a Roman numeral to an integer",
    "counts the lines in a file", "finds the most common element in a list", "chunks a list into pieces of size n",
    "computes the running average of a list", "capitalizes the first letter of every word",
    "checks whether parentheses in a string are balanced", "computes the edit distance between two strings",
    "implements a simple LRU cache", "parses a URL into its parts", "retries a failing function call up to three times",
    "implements quicksort", "implements merge sort", "finds the maximum subarray sum",
    "returns all permutations of a list", "returns all subsets of a set", "computes the power set of a string",
    "groups words that are anagrams", "computes the median of a list", "normalizes a list of numbers to [0, 1]",
    "implements a simple calculator", "simulates rolling two dice many times", "computes a moving window maximum",
    "checks whether a year is a leap year", "formats a number with thousands separators",
    "converts snake_case to camelCase", "strips HTML tags from a string", "counts the characters in a file",
    "implements a binary search tree with insert and search", "finds the intersection of two lists",
    "computes the dot product of two vectors", "implements a countdown timer", "finds duplicates in a list",
    "sums the digits of a number", "checks whether a list is sorted", "implements run-length encoding",
)

CODING_TEMPLATES = (
    "Write a Python function that {task}.", "Write a Python function that {task}. Include a docstring.",
    "Write a Python function that {task} and add type hints.", "Write a Python program that {task}.",
    "Write a JavaScript function that {task}.", "Write a function in C that {task}.",
    "How do I write a Python function that {task}? Explain the approach first.",
    "Write a Python function that {task}, then explain its time complexity.",
    "Write a Python function that {task} and a few tests for it.",
    "Write a short, readable Python solution: a function that {task}.",
    "Show me two different ways in Python to write a function that {task}.",
    "Write a recursive Python function that {task}, if recursion makes sense; otherwise explain why not.",
)


def doc_items() -> list[tuple[str, str]]:
    """(qualified name, cleaned docstring) of public documented functions, classes and methods of
    STDLIB_MODULES and of the builtin types, sorted by name."""
    items = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for module_name in STDLIB_MODULES:
            module = importlib.import_module(module_name)
            for name, obj in inspect.getmembers(module):
                if name.startswith("_") or not (inspect.isroutine(obj) or inspect.isclass(obj)):
                    continue
                home = getattr(obj, "__module__", None) or ""
                if module_name != "builtins" and not home.lstrip("_").startswith(module_name.split(".")[0]):
                    continue
                items[f"{module_name}.{name}" if module_name != "builtins" else name] = obj
        for type_name in BUILTIN_TYPES:
            cls = getattr(importlib.import_module("builtins"), type_name)
            for name, obj in vars(cls).items():
                if not name.startswith("_") and callable(obj):
                    items[f"{type_name}.{name}"] = obj
    out = []
    for qualname, obj in sorted(items.items()):
        doc = clean_doc(inspect.getdoc(obj) or "")
        if len(doc) >= 20:
            out.append((qualname, doc))
    return out


def clean_doc(doc: str) -> str:
    """The first paragraphs of a docstring, at most MAX_DOC_CHARS characters, cut at a paragraph or word."""
    doc = doc.strip()
    if len(doc) <= MAX_DOC_CHARS:
        return doc
    cut = doc[:MAX_DOC_CHARS]
    return (cut[:cut.rfind("\n\n")] if "\n\n" in cut else cut[:cut.rfind(" ")]).strip()


def summary_line(doc: str) -> str:
    """The docstring's first sentence, as a request (signature lines such as `f(x) -> y` skipped)."""
    lines = [line for line in doc.split("\n\n") if "(" not in line.split(" ")[0] or " " in line.strip()]
    first = (lines[0] if lines else doc).replace("\n", " ").strip()
    return first.split(". ")[0].rstrip(".") + "."


def group_of(kind: str) -> str:
    return "code" if kind in CODE_KINDS else "chat"


def build_prompts(seed: int = 0) -> list[dict]:
    """All prompts as {"kind", "group", "source", "prompt"} dicts, in a seeded shuffled order."""
    rng = random.Random(seed)
    prompts = []
    for qualname, doc in doc_items():
        for template in rng.sample(DOC_TEMPLATES, 2):
            text = template.format(name=qualname, doc=doc, summary=summary_line(doc))
            source = f"template:stdlib#{DOC_TEMPLATES.index(template)} x docstring of {qualname}"
            prompts.append({"kind": "stdlib", "source": source, "prompt": text})
    for i, topic in enumerate(TOPICS):
        for template in rng.sample(TOPIC_TEMPLATES, 8):
            text = template.format(topic=topic, other=rng.choice([t for t in TOPICS if t != topic]))
            source = f"template:topic#{TOPIC_TEMPLATES.index(template)} x TOPICS[{i}]"
            prompts.append({"kind": "topic", "source": source, "prompt": text[0].upper() + text[1:]})
    for i, task in enumerate(CODING_TASKS):
        for template in rng.sample(CODING_TEMPLATES, 6):
            source = f"template:coding#{CODING_TEMPLATES.index(template)} x CODING_TASKS[{i}]"
            prompts.append({"kind": "coding", "source": source, "prompt": template.format(task=task)})
    prompts += chat_prompts(seed)
    unique = list({p["prompt"]: p | {"group": group_of(p["kind"])} for p in prompts}.values())
    rng.shuffle(unique)
    return unique


def interleave_kinds(prompts: list[dict]) -> list[dict]:
    """The prompts reordered so that any prefix mixes the kinds (benchmarks take the first few)."""
    kinds = sorted({p["kind"] for p in prompts})
    by_kind = [[p for p in prompts if p["kind"] == kind] for kind in kinds]
    return [group[i] for i in range(max(map(len, by_kind), default=0)) for group in by_kind if i < len(group)]


def subject_of(prompt: dict) -> str:
    """What a prompt was made from apart from its phrasing: a templated prompt's subject, from its source
    ("EXPLAIN_QUESTIONS[3]", a story's character + goal + setting, "docstring of str.split", "TOPICS[7]"), else the
    prompt itself (a math problem)."""
    found = TEMPLATED_SOURCE.fullmatch(prompt.get("source", ""))
    return found[1] if found else prompt["prompt"]


def split_prompts(prompts: list[dict], heldout: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(train, heldout): about `heldout` prompts drawn per kind in proportion (at least one subject of each kind),
    seeded, whole subjects at a time (subject_of), so that no held-out prompt shares its subject with a training
    one."""
    if not 0 < heldout < len(prompts):
        raise ValueError(f"heldout must be in (0, {len(prompts)}), got {heldout}")
    rng = random.Random(seed + 1)
    chosen = set()
    for kind in sorted({p["kind"] for p in prompts}):
        subjects = {}  # subject -> indices of its prompts, in file order
        for i, p in enumerate(prompts):
            if p["kind"] == kind:
                subjects.setdefault(subject_of(p), []).append(i)
        quota = max(1, round(heldout * sum(map(len, subjects.values())) / len(prompts)))
        taken = 0
        for subject in rng.sample(sorted(subjects), len(subjects)):
            if taken >= quota:
                break
            chosen.update(subjects[subject])
            taken += len(subjects[subject])
    held = interleave_kinds([prompts[i] for i in sorted(chosen)])
    return [p for i, p in enumerate(prompts) if i not in chosen], held


def extend_split(committed: dict, prompts: list[dict], heldout_fraction: float, seed: int = 0):
    """(train, heldout) that keep every prompt of `committed` (a prompts file's content) on its side, in its order,
    and split only the prompts it lacks, `heldout_fraction` of them held out per kind."""
    old = {p["prompt"] for side in ("train", "heldout") for p in committed[side]}
    fresh = [p for p in prompts if p["prompt"] not in old]
    known = {p["prompt"]: p for p in prompts}
    keep = {side: [known.get(p["prompt"], p) for p in committed[side]] for side in ("train", "heldout")}
    for side in keep:  # entries of an older file format gain a group and a source
        keep[side] = [p | {key: value for key, value in (("source", "earlier prompts file"),
                                                          ("group", group_of(p["kind"]))) if key not in p}
                      for p in keep[side]]
    if not fresh:
        return keep["train"], keep["heldout"]
    train, held = split_prompts(fresh, max(1, round(heldout_fraction * len(fresh))), seed)
    return keep["train"] + train, keep["heldout"] + held


def read_prompts(path, group: str | None) -> dict:
    """A prompts file's content, once `group` is checked (a group name or None)."""
    if group is not None and group not in GROUPS:
        raise ValueError(f"group must be one of {GROUPS} or None, got {group!r}")
    return json.loads(Path(path).read_text())


def load_prompts(path=PROMPTS_FILE, group: str | None = None) -> tuple[list[str], list[str]]:
    """(train prompts, held-out prompts) as strings, from the committed prompts file; with `group` ("code" or
    "chat") only that group's, reordered so that any prefix mixes its kinds."""
    data = read_prompts(path, group)
    sides = [data["train"], data["heldout"]]
    if group is not None:
        sides = [interleave_kinds([p for p in side if group_of(p["kind"]) == group]) for side in sides]
    return [p["prompt"] for p in sides[0]], [p["prompt"] for p in sides[1]]


def unseen_heldout(path=PROMPTS_FILE, group: str | None = None) -> list[str]:
    """The held-out prompts whose subject (subject_of) no training prompt shares, as strings, kinds interleaved (with
    `group`, only that group's): phrasings of material a drafter trained on the file has never seen."""
    data = read_prompts(path, group)
    trained = {subject_of(p) for p in data["train"]}
    held = [p for p in data["heldout"] if subject_of(p) not in trained and group in (None, group_of(p["kind"]))]
    return [p["prompt"] for p in interleave_kinds(held)]


def prompts_by_group(groups, split: str, count: int, path=PROMPTS_FILE) -> dict[str, list[str]]:
    """The first `count` prompts of each group, kinds interleaved, from one part of the committed file: "heldout";
    "train" (what a drafter was trained on: what it learnt, apart from how it generalises); or "unseen", the held-out
    prompts whose subject no training prompt shares (unseen_heldout). A group with none there is refused."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if split == "unseen":
        found = {group: unseen_heldout(path, group) for group in groups}
    else:
        found = {group: load_prompts(path, group)[SPLITS.index(split)] for group in groups}
    empty = [group for group, prompts in found.items() if not prompts]
    if empty:
        raise ValueError(f"the prompts file has no such {' or '.join(empty)} prompts")
    return {group: prompts[:count] for group, prompts in found.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PROMPTS_FILE)
    parser.add_argument("--keep-split", type=Path, default=PROMPTS_FILE,
                        help="a prompts file whose prompts keep their side (default: the committed one, if any)")
    parser.add_argument("--heldout-fraction", type=float, default=0.04, help="of the prompts not yet split")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    committed = json.loads(args.keep_split.read_text()) if args.keep_split.exists() else {"train": [], "heldout": []}
    train, heldout = extend_split(committed, build_prompts(args.seed), args.heldout_fraction, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    count = lambda side: {g: sum(p["group"] == g for p in side) for g in GROUPS}  # noqa: E731
    meta = {"python": sys.version.split()[0], "seed": args.seed, "train_count": len(train),
            "heldout_count": len(heldout), "train_groups": count(train), "heldout_groups": count(heldout)}
    atomic_write(args.out, json.dumps({"meta": meta, "train": train, "heldout": heldout}, indent=0) + "\n")
    kinds = {kind: sum(p["kind"] == kind for p in train) for kind in sorted({p["kind"] for p in train})}
    print(f"wrote {args.out}: {len(train)} train prompts {kinds}, {len(heldout)} held out {count(heldout)}")


if __name__ == "__main__":
    main()
