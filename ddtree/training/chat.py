"""General-chat prompts for self-distillation of the drafter: the everyday requests that prompts.py (topic explanations
and coding) lacks. Nine kinds: explain, howto, recipe, summary, advice, compare, list, story and math.

All material (question subjects, tasks, dishes, situations, pairs, story premises, the summary passages, the math
names and frames; data/chat_material.jsonl) was written by hand for this module; nothing is downloaded or copied.
Prompts are templates filled with subjects, a fraction of them with a kind-specific suffix (audience, length, tone),
plus seeded math word problems. Each prompt records its `source`, naming the template and the table entry it came
from, so it can be traced back to the material file. `chat_prompts(seed)` is deterministic: every draw of DRAWS
(material added in one go; the committed prompts file holds each) in turn, each from its own seeded stream, so that
new material adds prompts and leaves the committed ones as they are.
"""
from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

from ddtree.files import MAX_JSON_BYTES, read_bytes_bounded

SUFFIX_RATE = 0.35  # share of templated prompts that get a kind-specific suffix
STORY_COMBOS = 300  # character + goal + setting combinations drawn for stories
MATH_COUNT = 600
MATERIAL_FILE = Path(__file__).resolve().parent / "data" / "chat_material.jsonl"


def material_entry(record) -> tuple[str, str | tuple[str, str]]:
    """(table, entry) of one material record: {"table": name, "text": str} or {"table": name, "pair": [a, b]} (an
    (a, b) tuple), with "kind" for a suffix (table SUFFIXES['<kind>'], as sources name it). ValueError if malformed."""
    if not isinstance(record, dict) or not isinstance(record.get("table"), str):
        raise ValueError('not an object with a "table" name')
    extra = set(record) - {"table", "kind", "text", "pair"}
    if extra or ("text" in record) == ("pair" in record):
        raise ValueError(f'needs exactly one of "text" and "pair", and no other field than "table" and "kind" '
                         f"(has {sorted(record)})")
    entry = record.get("text", record.get("pair"))
    if "pair" in record:
        if not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(v, str) for v in entry)):
            raise ValueError(f'"pair" must be a list of two strings, got {entry!r}')
        entry = tuple(entry)
    elif not isinstance(entry, str):
        raise ValueError(f'"text" must be a string, got {entry!r}')
    if "kind" not in record:
        return record["table"], entry
    if not isinstance(record["kind"], str):
        raise ValueError(f'"kind" must be a string, got {record["kind"]!r}')
    return f"{record['table']}[{record['kind']!r}]", entry


def read_material(path=MATERIAL_FILE) -> dict[str, tuple]:
    """{table: entries in file order} of a material file (JSON Lines, one record a line, see material_entry); a
    malformed line is a ValueError naming the file and the line."""
    tables = {}
    for number, line in enumerate(read_bytes_bounded(path, MAX_JSON_BYTES, "chat material").splitlines(), 1):
        try:
            table, entry = material_entry(json.loads(line))
        except ValueError as e:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise ValueError(f"chat material {path}, line {number}: {e}") from None
        tables.setdefault(table, []).append(entry)
    return {table: tuple(entries) for table, entries in tables.items()}


_material = read_material()
EXPLAIN_QUESTIONS = _material["EXPLAIN_QUESTIONS"]  # everyday how/why questions ({x}: a lowercase clause)
EXPLAIN_TEMPLATES = _material["EXPLAIN_TEMPLATES"]
HOWTO_TASKS = _material["HOWTO_TASKS"]  # household, practical and personal tasks ({x}: a verb phrase)
HOWTO_TEMPLATES = _material["HOWTO_TEMPLATES"]
DISHES = _material["DISHES"]
DISH_TEMPLATES = _material["DISH_TEMPLATES"]
PANTRY_INGREDIENTS = _material["PANTRY_INGREDIENTS"]  # for what-can-I-cook-with requests
PANTRY_TEMPLATES = _material["PANTRY_TEMPLATES"]
SUMMARY_PASSAGES = _material["SUMMARY_PASSAGES"]  # facts, fictional news and notices, short fiction
SUMMARY_TEMPLATES = _material["SUMMARY_TEMPLATES"]
ADVICE_SITUATIONS = _material["ADVICE_SITUATIONS"]  # first person ({x} lowercase, {X} capitalized)
ADVICE_TEMPLATES = _material["ADVICE_TEMPLATES"]
CHOICE_PAIRS = _material["CHOICE_PAIRS"]  # (a, b): things people choose between
CHOICE_TEMPLATES = _material["CHOICE_TEMPLATES"]
DISTINCTION_PAIRS = _material["DISTINCTION_PAIRS"]  # (a, b): things people confuse
DISTINCTION_TEMPLATES = _material["DISTINCTION_TEMPLATES"]
LIST_REQUESTS = _material["LIST_REQUESTS"]  # ideas, names, tips ({x}: a plural noun phrase, {n}: a count)
LIST_COUNTS = _material["LIST_COUNTS"]
LIST_TEMPLATES = _material["LIST_TEMPLATES"]
STORY_PREMISES = _material["STORY_PREMISES"]  # written premises; the parts below make character + goal + setting ones
STORY_CHARACTERS = _material["STORY_CHARACTERS"]
STORY_GOALS = _material["STORY_GOALS"]
STORY_SETTINGS = _material["STORY_SETTINGS"]
STORY_TEMPLATES = _material["STORY_TEMPLATES"]
NAMES = _material["NAMES"]  # people in the math word problems
ITEMS = _material["ITEMS"]  # (a, b) things they buy
MATH_FRAMES = _material["MATH_FRAMES"]  # phrasings of a word problem ({p})


# --- math: seeded word problems (each function draws small numbers so that the answer is whole or a simple decimal) -
def shopping_total(r):
    a, b = r.choice(ITEMS)
    return (f"{r.choice(NAMES)} buys {r.randint(2, 9)} {a} at ${r.randint(2, 9)} each and {r.randint(2, 9)} {b} at "
            f"${r.randint(1, 5)} each. How much is spent in total?")


def change_owed(r):
    bill, count = r.choice((20, 50, 100)), r.randint(2, 6)
    price = r.randint(1, min(9, (bill - 1) // count))
    return (f"{r.choice(NAMES)} pays with a ${bill} bill for {count} {r.choice(ITEMS)[0]} costing ${price} each. "
            "How much change should come back?")


def distance(r):
    vehicle, speed = r.choice((("train", r.randrange(60, 160, 10)), ("car", r.randrange(40, 110, 5)),
                               ("cyclist", r.randint(12, 25)), ("bus", r.randrange(30, 80, 5))))
    return f"A {vehicle} travels at {speed} km/h for {r.randint(2, 5)} hours. How far does it go?"


def travel_time(r):
    speed, hours = r.randint(10, 20), r.randint(2, 5)
    return f"{r.choice(NAMES)} cycles {speed * hours} km at a steady {speed} km/h. How long does the ride take?"


def recipe_scaling(r):
    people, per_person, new_people = r.randint(2, 6), r.randrange(25, 100, 25), r.randint(3, 12)
    ingredient = r.choice(("flour", "rice", "pasta", "sugar", "oats"))
    return (f"A recipe for {people} people needs {people * per_person} grams of {ingredient}. How much {ingredient} "
            f"do I need for {new_people} people?")


def discount(r):
    item, price = r.choice(("jacket", "pair of shoes", "lamp", "backpack", "bike helmet")), r.randrange(20, 200, 20)
    return f"A {item} costs ${price} and is on sale for {r.choice((10, 20, 25, 50))}% off. What is the sale price?"


def percent_of_group(r):
    total, pct = r.randrange(20, 200, 20), r.choice((5, 10, 20, 25, 50, 75))
    group, rest = r.choice((("students in a class", "walk to school"), ("people at a concert", "bought tickets online"),
                            ("members of a running club", "ran a marathon this year"),
                            ("trees in an orchard", "are apple trees")))
    return f"There are {total} {group}, and {pct}% of them {rest}. How many is that?"


def ages(r):
    name, age, times = r.choice(NAMES), r.randint(4, 12), r.randint(3, 5)
    return (f"{name} is {age} years old, and {name}'s mother is {times} times as old. How old will the mother be "
            f"when {name} turns {age + r.randint(3, 15)}?")


def room_area(r):
    width, length = r.randint(2, 9), r.randint(3, 12)
    return r.choice((f"A room is {width} m wide and {length} m long. How many square meters of carpet do we need?",
                     f"A garden is {width} m by {length} m. How many meters of fence go all the way around it?"))


def sharing(r):
    name, friends = r.choice(NAMES), r.randint(3, 8)
    things = r.choice(("stickers", "marbles", "cookies", "trading cards"))
    return (f"{name} has {friends * r.randint(3, 12) + r.randint(0, friends - 1)} {things} and shares them equally "
            f"among {friends} friends. How many does each friend get, and how many are left over?")


def clock_time(r):
    start, minutes = f"{r.randint(1, 9)}:{r.randrange(0, 60, 5):02d} p.m.", r.randrange(85, 175, 5)
    return f"A movie starts at {start} and lasts {minutes} minutes. What time does it end?"


def unit_price(r):
    small, large = r.randint(3, 6), r.randint(8, 12)
    cents_small, cents_large = r.randrange(40, 90, 5), r.randrange(30, 85, 5)
    return (f"A bag of {small} oranges costs ${small * cents_small / 100:.2f} and a bag of {large} oranges costs "
            f"${large * cents_large / 100:.2f}. Which bag is the better deal per orange?")


def saving_weeks(r):
    name, weekly, weeks = r.choice(NAMES), r.randrange(5, 30, 5), r.randint(4, 20)
    thing = r.choice(("a bike", "a guitar", "a video game console", "a skateboard", "a tent"))
    return (f"{name} saves ${weekly} every week. How many weeks until {name} can buy {thing} that costs "
            f"${weekly * weeks}?")


def fuel_use(r):
    per_100, trip = r.randint(5, 9), r.randrange(150, 900, 50)
    return f"A car uses {per_100} liters of fuel per 100 km. How much fuel does it need for a trip of {trip} km?"


def workers(r):
    crew, other = r.sample(range(2, 10), 2)
    days = other * r.randint(1, 3)  # so that crew * days / other is whole
    return (f"If {crew} workers can paint a building in {days} days, how long would it take {other} workers "
            "working at the same rate?")


def score_average(r):
    scores = [r.randint(60, 100) for _ in range(4)]
    scores[3] -= sum(scores) % 4
    return (f"{r.choice(NAMES)} scored {scores[0]}, {scores[1]}, {scores[2]} and {scores[3]} on four tests. What is "
            "the average score?")


def wages(r):
    name = r.choice(NAMES)
    return (f"{name} earns ${r.randint(12, 30)} per hour and works {r.randint(8, 40)} hours a week. How much does "
            f"{name} earn in {r.randint(2, 6)} weeks?")


def pizza_fraction(r):
    slices = r.choice((6, 8, 10, 12))
    first, second = r.randint(1, slices // 2), r.randint(1, slices // 2 - 1)
    name, friend = r.sample(NAMES, 2)
    return (f"A pizza is cut into {slices} equal slices. {name} eats {first} and {friend} eats {second}. What "
            "fraction of the pizza is left?")


def tank_volume(r):
    length, width, height = r.randrange(30, 130, 10), r.randrange(20, 60, 10), r.randrange(20, 60, 10)
    return (f"A fish tank is {length} cm long, {width} cm wide and {height} cm tall. How many liters of water does "
            "it hold when full?")


def temperature(r):
    start, rise, fall = r.randint(-5, 12), r.randint(3, 15), r.randint(5, 20)
    return (f"At 6 a.m. it was {start} degrees Celsius. By noon it had risen {rise} degrees, and by midnight it had "
            f"fallen {fall} degrees from the noon temperature. What was the temperature at midnight?")


def fence_cost(r):
    width, length, gate, price = r.randint(4, 15), r.randint(6, 25), r.randint(1, 3), r.randint(8, 25)
    return (f"A rectangular garden is {width} m wide and {length} m long. It needs a fence all the way around, except "
            f"for a {gate} m gate. If fencing costs ${price} per meter, how much will the fence cost?")


def simple_interest(r):
    name, principal, rate, years = r.choice(NAMES), r.randrange(500, 5000, 100), r.randint(2, 6), r.randint(2, 5)
    return (f"{name} puts ${principal} in a savings account that pays {rate}% simple interest per year. How much "
            f"interest will {name} have earned after {years} years?")


def mix_ratio(r):
    mix, first, second, unit = r.choice((("light blue paint", "white paint", "blue paint", "liters"),
                                         ("lemonade", "water", "lemon syrup", "cups"),
                                         ("potting soil", "compost", "sand", "kilograms"),
                                         ("trail mix", "peanuts", "raisins", "grams")))
    a, b = r.choice(((2, 1), (3, 1), (3, 2), (4, 1), (5, 2), (5, 3), (4, 3)))
    total = (a + b) * (r.randint(2, 12) if unit != "grams" else r.randrange(20, 100, 10))
    return (f"To make {mix}, {first} and {second} are mixed in the ratio {a}:{b}. How many {unit} of each are needed "
            f"to make {total} {unit} of {mix}?")


def catch_up(r):
    name, friend = r.sample(NAMES, 2)
    slow, head, gap = r.randrange(40, 90, 10), r.randint(1, 3), r.choice((10, 20, 40))  # slow * head / gap: quarters
    return (f"{name} leaves town driving at {slow} km/h. {friend} sets off on the same road {head} "
            f"hour{'s' if head > 1 else ''} later, driving at {slow + gap} km/h. How long after setting off does "
            f"{friend} catch up with {name}?")


def days_between(r):
    name, (month, days) = r.choice(NAMES), r.choice((("January", 31), ("March", 31), ("April", 30), ("May", 31),
                                                     ("June", 30), ("July", 31), ("August", 31), ("September", 30),
                                                     ("October", 31), ("November", 30), ("December", 31)))
    start = r.randint(1, days - 5)
    end = r.randint(start + 3, days)
    return r.choice((f"{name} checks into a hotel on {month} {start} and checks out on {month} {end}. How many nights "
                     f"does {name} stay?",
                     f"{name} borrows a library book on {month} {start} and must return it by {month} {end}. How many "
                     f"days does {name} have to read it?"))


def price_rise(r):
    item, old = r.choice(("a monthly bus pass", "a concert ticket", "a pair of running shoes", "a winter coat",
                          "a monthly gym membership", "a monthly phone plan")), r.randrange(20, 200, 20)
    new = old + old * r.choice((5, 10, 15, 20, 25, 30, 40, 50)) // 100  # old is a multiple of 20, so this is exact
    return f"Last year {item} cost ${old}. This year it costs ${new}. By what percentage did the price go up?"


def split_bill(r):
    people, tip = r.randint(2, 8), r.choice((10, 15, 20))
    bill = people * (20 if tip == 15 else 10) * r.randint(2, 8)  # so the tip and each share come out whole
    return (f"A group of {people} friends have dinner and the bill comes to ${bill}. They add a {tip}% tip and split "
            "the total equally. How much does each person pay?")


def average_speed(r):
    mean, first_hours, second_hours = r.randrange(50, 95, 5), r.randint(1, 2), r.randint(1, 2)
    first_speed = mean + r.choice((-10, -5, 5, 10))
    first_km = first_speed * first_hours
    second_km = mean * (first_hours + second_hours) - first_km  # so the average over both legs is `mean`
    return (f"A bus drives {first_km} km in {first_hours} hour{'s' if first_hours > 1 else ''}, then another "
            f"{second_km} km in {second_hours} hour{'s' if second_hours > 1 else ''}. What is its average speed for "
            "the whole journey?")


def farm_legs(r):
    two, four = r.choice((("chickens", "cows"), ("ducks", "goats"), ("geese", "sheep"), ("hens", "pigs")))
    birds, beasts = r.randint(3, 30), r.randint(2, 20)
    return (f"A farm has only {two} and {four}. Altogether there are {birds + beasts} heads and "
            f"{2 * birds + 4 * beasts} legs. How many {two} and how many {four} are there?")


def practice_hours(r):
    name, minutes, days = r.choice(NAMES), r.randrange(15, 120, 15), r.randint(3, 30)  # quarter hours
    activity = r.choice(("practices the piano", "reads", "goes jogging", "studies Spanish", "walks the dog"))
    return f"{name} {activity} for {minutes} minutes a day for {days} days. How many hours is that in total?"


def ribbon_pieces(r):
    piece, count = r.choice((10, 15, 20, 25, 30, 40, 50, 75)), r.randint(4, 30)
    thing = r.choice(("ribbon", "rope", "roll of fabric", "piece of string", "length of garden hose"))
    return (f"A {thing} is {piece * count / 100:g} m long. How many pieces of {piece} cm can be cut from it with "
            "nothing left over?")


def triangle_area(r):
    base, height = r.randint(2, 20), r.randint(2, 16)
    thing = r.choice(("flower bed", "sail", "corner of a lawn", "pennant flag", "roof gable"))
    unit = "cm" if thing == "pennant flag" else "m"
    return (f"A triangular {thing} has a base of {base} {unit} and a height of {height} {unit}. What is its area in "
            f"square {unit}?")


def bag_probability(r):
    total = r.choice((10, 20, 25, 50))  # divides 100, so the probability is a clean decimal
    red = r.randint(1, total - 2)
    blue = r.randint(1, total - red - 1)
    things = r.choice(("marbles", "sweets", "buttons", "beads"))
    name, color = r.choice(NAMES), r.choice(("red", "blue", "green"))
    return (f"A bag holds {red} red, {blue} blue and {total - red - blue} green {things}. {name} picks one without "
            f"looking. What is the probability that it is {color}?")


def floor_tiles(r):
    width, length, tile = r.randint(2, 8), r.randint(3, 12), r.choice((20, 25, 50))
    room = r.choice(("kitchen", "bathroom", "hallway", "patio", "laundry room"))
    return (f"A {room} floor is {width} m wide and {length} m long. How many square tiles measuring {tile} cm by "
            f"{tile} cm are needed to cover it?")


MATH_PROBLEMS = (
    shopping_total, change_owed, distance, travel_time, recipe_scaling, discount, percent_of_group, ages, room_area,
    sharing, clock_time, unit_price, saving_weeks, fuel_use, workers, score_average, wages, pizza_fraction,
    tank_volume, temperature,
    # appended 2026-12-04 (DRAWS[1])
    fence_cost, simple_interest, mix_ratio, catch_up, days_between, price_rise, split_bill, average_speed, farm_legs,
    practice_hours, ribbon_pieces, triangle_area, bag_probability, floor_tiles,
)


# (kind, template tuple, subject tuple, templates drawn per subject); subjects are strings or (a, b) pairs
TEMPLATED = (
    ("explain", "EXPLAIN_TEMPLATES", "EXPLAIN_QUESTIONS", 5), ("howto", "HOWTO_TEMPLATES", "HOWTO_TASKS", 5),
    ("recipe", "DISH_TEMPLATES", "DISHES", 5), ("recipe", "PANTRY_TEMPLATES", "PANTRY_INGREDIENTS", 4),
    ("summary", "SUMMARY_TEMPLATES", "SUMMARY_PASSAGES", 11), ("advice", "ADVICE_TEMPLATES", "ADVICE_SITUATIONS", 5),
    ("compare", "CHOICE_TEMPLATES", "CHOICE_PAIRS", 5), ("compare", "DISTINCTION_TEMPLATES", "DISTINCTION_PAIRS", 5),
    ("list", "LIST_TEMPLATES", "LIST_REQUESTS", 5), ("story", "STORY_TEMPLATES", "STORY_PREMISES", 5),
)
# kind -> its suffixes, in TEMPLATED's order of kinds (summary has none)
SUFFIXES = {kind: _material.get(f"SUFFIXES[{kind!r}]", ()) for kind in dict.fromkeys(t[0] for t in TEMPLATED)}
# The size of every table at each draw of the committed prompts file (data/prompts.json): draw k reads the entries
# between draw k-1's sizes and its own (all its templates), from a seeded stream of its own, so that appending to a
# table adds prompts and changes none that is committed. Entries appended since the last draw here make a new draw.
DRAWS = (
    {  # 2026-12-02, drafter v2: the first material
        "EXPLAIN_QUESTIONS": 115, "EXPLAIN_TEMPLATES": 16, "HOWTO_TASKS": 122, "HOWTO_TEMPLATES": 14, "DISHES": 91,
        "DISH_TEMPLATES": 14, "PANTRY_INGREDIENTS": 30, "PANTRY_TEMPLATES": 6, "SUMMARY_PASSAGES": 48,
        "SUMMARY_TEMPLATES": 16, "ADVICE_SITUATIONS": 103, "ADVICE_TEMPLATES": 15, "CHOICE_PAIRS": 75,
        "CHOICE_TEMPLATES": 12, "DISTINCTION_PAIRS": 48, "DISTINCTION_TEMPLATES": 10, "LIST_REQUESTS": 109,
        "LIST_TEMPLATES": 14, "STORY_PREMISES": 50, "STORY_TEMPLATES": 15, "STORY_CHARACTERS": 20, "STORY_GOALS": 15,
        "STORY_SETTINGS": 15, "MATH_PROBLEMS": 20, "MATH_FRAMES": 14,
    },
    {  # 2026-12-04, for drafter v6: about as many subjects again, more templates, story parts and math problems
        "EXPLAIN_QUESTIONS": 275, "EXPLAIN_TEMPLATES": 24, "HOWTO_TASKS": 282, "HOWTO_TEMPLATES": 22, "DISHES": 201,
        "DISH_TEMPLATES": 20, "PANTRY_INGREDIENTS": 70, "PANTRY_TEMPLATES": 10, "SUMMARY_PASSAGES": 103,
        "SUMMARY_TEMPLATES": 22, "ADVICE_SITUATIONS": 233, "ADVICE_TEMPLATES": 21, "CHOICE_PAIRS": 165,
        "CHOICE_TEMPLATES": 17, "DISTINCTION_PAIRS": 118, "DISTINCTION_TEMPLATES": 15, "LIST_REQUESTS": 239,
        "LIST_TEMPLATES": 20, "STORY_PREMISES": 110, "STORY_TEMPLATES": 21, "STORY_CHARACTERS": 35, "STORY_GOALS": 27,
        "STORY_SETTINGS": 27, "MATH_PROBLEMS": 34, "MATH_FRAMES": 20,
    },
)


def upper_first(text: str) -> str:
    return text[0].upper() + text[1:]


def fill(rng: random.Random, kind: str, templates: tuple, templates_name: str, items: list[tuple[str, dict]],
         per_item: int) -> list[dict]:
    """Prompts from `per_item` distinct `templates` per (source label, format fields) item; SUFFIX_RATE of them get
    one of SUFFIXES[kind]. Fields: x and X (subject, and capitalized) or a, A and b (pair); n (a count) is drawn here."""
    out = []
    for label, fields in items:
        for t in rng.sample(range(len(templates)), per_item):
            text = templates[t].format(n=rng.choice(LIST_COUNTS), **fields)
            source = f"template:{templates_name}[{t}] x {label}"
            if SUFFIXES[kind] and rng.random() < SUFFIX_RATE:
                s = rng.randrange(len(SUFFIXES[kind]))
                text, source = f"{text} {SUFFIXES[kind][s]}", f"{source} + SUFFIXES[{kind!r}][{s}]"
            out.append({"kind": kind, "source": source, "prompt": upper_first(text)})
    return out


def subject_items(name: str, start: int, stop: int) -> list[tuple[str, dict]]:
    """(source label, format fields) items of entries start..stop-1 of the subject tuple called `name`: strings or
    (a, b) pairs."""
    return [(f"{name}[{i}]", {"a": v[0], "A": upper_first(v[0]), "b": v[1]} if isinstance(v, tuple)
             else {"x": v, "X": upper_first(v)}) for i, v in enumerate(globals()[name][start:stop], start)]


def story_combos(rng: random.Random, before: dict, sizes: dict) -> list[tuple[str, dict]]:
    """STORY_COMBOS sampled character + goal + setting premises, as (label, fields) items, among the combinations of
    the parts within `sizes` that are not all within `before`."""
    parts = ("STORY_CHARACTERS", "STORY_GOALS", "STORY_SETTINGS")
    grid = [combo for combo in itertools.product(*(range(sizes[name]) for name in parts))
            if not all(i < before[name] for i, name in zip(combo, parts))]
    return [(f"STORY_CHARACTERS[{c}]+STORY_GOALS[{g}]+STORY_SETTINGS[{s}]",
             {"x": f"{STORY_CHARACTERS[c]} {STORY_GOALS[g]} {STORY_SETTINGS[s]}"})
            for c, g, s in rng.sample(grid, min(STORY_COMBOS, len(grid)))]


def math_prompts(rng: random.Random, problems: tuple, frames: tuple) -> list[dict]:
    """MATH_COUNT unique word problems (fewer if `problems` cannot make so many), cycling through `problems`, each in
    a random phrasing of `frames`."""
    out, seen = [], set()
    for i in range(MATH_COUNT * 20 if problems else 0):
        if len(out) == MATH_COUNT:
            break
        problem, f = problems[i % len(problems)], rng.randrange(len(frames))
        text = frames[f].format(p=problem(rng))
        if text not in seen:
            seen.add(text)
            out.append({"kind": "math", "source": f"generated:math {problem.__name__} (seeded numbers) x "
                        f"MATH_FRAMES[{f}]", "prompt": text})
    return out


def draw(rng: random.Random, before: dict, sizes: dict) -> list[dict]:
    """One draw's prompts: the subjects, story parts and math problems past `before` (tuple sizes) up to `sizes`,
    with the templates and frames up to `sizes`."""
    whole = lambda name: globals()[name][:sizes[name]]  # noqa: E731
    prompts = [prompt for kind, templates, subjects, per in TEMPLATED
               for prompt in fill(rng, kind, whole(templates), templates, subject_items(subjects, before[subjects],
                                                                                         sizes[subjects]), per)]
    stories = fill(rng, "story", whole("STORY_TEMPLATES"), "STORY_TEMPLATES", story_combos(rng, before, sizes), 1)
    problems = MATH_PROBLEMS[before["MATH_PROBLEMS"]:sizes["MATH_PROBLEMS"]]
    return prompts + stories + math_prompts(rng, problems, whole("MATH_FRAMES"))


def chat_prompts(seed: int = 0) -> list[dict]:
    """General-chat prompts as {"kind": str, "source": str, "prompt": str} dicts, deterministic for a seed: every
    draw of DRAWS in turn, then one over the entries appended since the last (none while the file is up to date)."""
    rng = random.Random(seed)
    now = {name: len(globals()[name]) for name in DRAWS[-1]}
    bounds = [{name: 0 for name in now}, *DRAWS, now]
    unique = {}
    for k, (before, sizes) in enumerate(zip(bounds, bounds[1:])):
        for p in draw(rng if k == 0 else random.Random(f"{seed}:draw{k}"), before, sizes):
            unique.setdefault(p["prompt"], p)
    unique = list(unique.values())
    rng.shuffle(unique)
    return unique


if __name__ == "__main__":
    from collections import Counter

    result = chat_prompts()
    print(len(result), dict(Counter(p["kind"] for p in result)))
