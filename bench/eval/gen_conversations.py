"""Generate the conversational-memory set: ``python -m bench.eval.gen_conversations``.

What agents keep in a vault when they remember conversations: one note per session
between two people, with a short summary and the dialogue turn by turn (markvault's
session note layout: ``## Summary``, then ``## Transcript`` with a ``### HH:MM Name``
heading per turn). Questions ask who said or did what, and when, over many sessions;
each names the turn(s) that answer it, so runs are judged per session (the note) and
per turn (the hit's chunk holds an evidence turn).

Everything is made up here from templates and word lists (people, pets, places,
bands and books are invented or generic), with a fixed seed, so the set is
reproducible and owes nothing to any published dataset. Life events are spread over
the sessions; some come back later in passing ("how is Biscuit?"), which gives a
question's words more than one session to match; questions often use other words
than the dialogue ("dog" for "beagle puppy", "get a job" for "accepted an offer").

Writes ``bench/eval/sets/conversations.json``; ``conversation.py`` turns it into a
vault and scores runs.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "sets" / "conversations.json"
SEED = 11
SESSIONS = 16
PAIRS = [("Maya", "she", "Tom", "he"), ("Priya", "she", "Jonas", "he")]
PAIRS += [("Lena", "she", "Marcus", "he"), ("Aiko", "she", "Daniel", "he")]
POSSESSIVE = {"she": "her", "he": "his"}

POOLS: dict[str, list[str]] = {
    "pet": [
        "Biscuit",
        "Pepper",
        "Mochi",
        "Juniper",
        "Waffles",
        "Clementine",
        "Otis",
        "Nutmeg",
        "Pickle",
        "Saffron",
        "Tofu",
        "Bramble",
    ],
    "dog_breed": ["beagle", "border collie", "dachshund", "labrador", "whippet", "corgi"],
    "cat_breed": ["tabby", "ginger", "black-and-white", "Siamese", "Maine Coon"],
    "shelter": ["Riverside", "Northgate", "Elm Street", "Harbour View", "Westfield"],
    "city": [
        "Lisbon",
        "Kyoto",
        "Reykjavik",
        "Marrakesh",
        "Vancouver",
        "Tallinn",
        "Oaxaca",
        "Hobart",
        "Ljubljana",
        "Valparaiso",
        "Hanoi",
        "Bergen",
    ],
    "trip_activity": [
        "hiking along the coast",
        "eating our way through the night markets",
        "cycling between small villages",
        "visiting every museum we could find",
        "kayaking in the fjords",
        "taking a cooking course",
        "surfing at sunrise",
        "walking old railway trails",
    ],
    "companion": [
        "my cousin Ruth",
        "two friends from university",
        "my dad",
        "my old flatmate Sam",
        "my partner",
        "a group from the climbing gym",
    ],
    "mishap": [
        "ferry got cancelled",
        "luggage went to the wrong airport",
        "rental car got a flat tyre",
        "hotel lost our booking",
        "phone fell into the harbour",
    ],
    "role": [
        "data analyst",
        "product designer",
        "nurse practitioner",
        "project manager",
        "sound engineer",
        "primary school teacher",
        "backend developer",
        "lab technician",
    ],
    "company": [
        "Brightwater Labs",
        "Kestrel Logistics",
        "Fernhill Clinic",
        "Quayside Studios",
        "Northwind Energy",
        "Parkside Academy",
        "Lumen Robotics",
        "Orchard Bank",
    ],
    "remote_days": ["two", "three", "four"],
    "hobby": [
        "pottery",
        "salsa",
        "bouldering",
        "watercolour painting",
        "woodworking",
        "Japanese calligraphy",
        "jazz piano",
        "stand-up comedy",
        "bread baking",
    ],
    "venue": [
        "community centre",
        "arts college",
        "old fire station",
        "library annex",
        "church hall",
        "studio above the bakery",
    ],
    "teacher": ["Rosa", "Mr Okafor", "Ingrid", "Benedikt", "Harriet", "Luis", "Yumi", "Colm"],
    "teacher_detail": [
        "used to perform professionally and is very strict about posture",
        "makes everyone start with ten minutes of warm-up exercises",
        "brings homemade biscuits to every lesson",
        "learned from her grandmother and tells the best stories",
        "says mistakes are the only way to learn, which helps",
    ],
    "body_part": ["ankle", "wrist", "knee", "shoulder", "lower back"],
    "sport": ["five-a-side football", "badminton", "volleyball", "tennis", "squash", "netball"],
    "weeks": ["two", "three", "four", "six"],
    "book": [
        "The Lighthouse Keeper's Ledger",
        "Salt and Cinders",
        "A Map of Quiet Rooms",
        "The Orchard at Night",
        "Nine Winters",
        "The Glass Cartographer",
        "Paper Harbours",
        "Echoes of the Tide",
    ],
    "author": [
        "Mirela Vance",
        "Tobias Hartwell",
        "Ines Castellano",
        "Owen Achterberg",
        "Fenna Morrow",
        "Rafael Quint",
        "Odile Baptiste",
    ],
    "book_reaction": ["gasp out loud on the bus", "stay up until two", "cry a little", "text you"],
    "band": [
        "The Paper Kites",
        "Velvet Oranges",
        "Northern Static",
        "Glass Animals Club",
        "The Lantern Society",
        "Moth Radio",
        "Saltwater Choir",
    ],
    "concert_venue": ["Roundhouse", "Corn Exchange", "Old Market", "Apollo", "Arena", "Ritz"],
    "song": ["Lighthouse", "Summer Static", "Cold Harbour", "Paper Moon", "Neon Fields"],
    "area": [
        "Canal Quarter",
        "Hillcrest",
        "the old town",
        "Riverside Park",
        "Southbank",
        "Millbrook",
        "Station Hill",
    ],
    "plant": ["tomatoes", "chillies", "strawberries", "herbs", "sunflowers"],
    "dish": [
        "a mushroom risotto",
        "beef rendang",
        "a lemon tart",
        "homemade ramen",
        "a vegetable lasagne",
        "paella",
        "dumplings from scratch",
        "a Sunday roast",
    ],
    "occasion": [
        "my parents' anniversary",
        "a dinner party",
        "my flatmate's birthday",
        "the office potluck",
        "New Year's Eve",
        "a date night",
    ],
    "outcome": [
        "Everyone had seconds, so I'm calling it a win.",
        "The bottom burnt a little but nobody noticed.",
        "It took four hours but it was worth it.",
        "My dad asked for the recipe, which never happens.",
    ],
    "org": [
        "the food bank",
        "an animal rescue",
        "the community garden",
        "a literacy charity",
        "the children's hospital",
        "a refugee support centre",
    ],
    "volunteer_task": [
        "sorting donations",
        "walking the dogs",
        "teaching adults to read",
        "reading stories to kids",
        "planting vegetable beds",
        "helping with English lessons",
    ],
    "purchase": [
        "secondhand road bike",
        "film camera",
        "digital piano",
        "small electric car",
        "sewing machine",
        "telescope",
        "kayak",
    ],
    "purchase_use": [
        "I've used it every single day since",
        "it's already paid for itself",
        "I have no idea what I'm doing with it yet",
        "the neighbours must hate me",
    ],
    "relative": ["sister", "brother", "cousin", "best friend"],
    "relative_name": ["Hannah", "Felix", "Noor", "Grace", "Arjun", "Elif", "Theo", "Martina"],
    "family_news": ["had a baby girl", "got engaged", "graduated from medical school"],
    "race": [
        "city half marathon",
        "Bridge to Bridge 10k",
        "coastal trail race",
        "charity 5k",
        "mountain relay",
    ],
    "race_time": ["1 hour 52 minutes", "48 minutes", "26 minutes", "2 hours 5 minutes"],
    "language": ["Portuguese", "Korean", "Italian", "Dutch", "Greek", "Swahili"],
    "language_reason": [
        "my partner's family barely speaks English",
        "we might move abroad next year",
        "I want to read my grandmother's letters",
        "work is sending me there in the autumn",
    ],
    "exam": [
        "driving test",
        "sommelier exam",
        "accounting certification",
        "scuba diving course",
        "first aid course",
    ],
    "exam_try": ["first", "second", "third"],
    "gave_up": ["coffee", "sugar", "alcohol", "social media", "takeaways"],
    "road": ["motorway", "ring road", "coast road", "mountain pass"],
    "destination": [
        "my grandmother's house",
        "the airport",
        "a wedding in the countryside",
        "the beach",
    ],
}


@dataclass
class Event:
    """One thing that happens to a person, told in a session in a few turns."""

    kind: str
    slots: dict[str, str]
    # (speaker role "a"/"b", text template, role name for evidence)
    turns: list[tuple[str, str, str]]
    summary: str
    questions: list[tuple[str, str, list[str]]]  # (kind, template, evidence roles)
    followup: list[tuple[str, str]] = field(default_factory=list)  # later mention


# Template sets per kind of event. ``{a}`` is the person it happens to, ``{b}`` the
# friend, ``{they}``/``{their}`` a's pronouns; other names are slots.
EVENTS: dict[str, Any] = {
    "dog": dict(
        slots=("pet", "dog_breed", "shelter"),
        turns=[
            (
                "a",
                "Big news: we adopted a {dog_breed} puppy last weekend! {pet} is asleep "
                "on my feet right now.",
                "announce",
            ),
            (
                "a",
                "Guess who has a new housemate? A little {dog_breed} puppy called {pet}.",
                "announce",
            ),
            ("b", "No way! A {dog_breed}? I need photos of {pet} immediately.", "react"),
            (
                "a",
                "We found {pet} at the {shelter} shelter. She already chewed through one of "
                "my trainers.",
                "detail",
            ),
        ],
        summary="{a} adopted a {dog_breed} puppy called {pet} from the {shelter} shelter.",
        questions=[
            ("when", "When did {a} get a dog?", ["announce"]),
            ("what", "What is the name of {a}'s puppy?", ["announce"]),
            ("where", "Where did {a} find {their} new dog?", ["detail"]),
            ("what", "What breed is {a}'s dog?", ["announce"]),
        ],
        followup=[
            ("b", "How is {pet} settling in?"),
            ("a", "{pet} is great, much calmer now. Still steals socks though."),
        ],
    ),
    "cat": dict(
        slots=("pet", "cat_breed", "shelter"),
        turns=[
            (
                "a",
                "I finally did it, I brought home a {cat_breed} kitten. Her name is {pet}.",
                "announce",
            ),
            ("b", "Aww, {pet} is such a good name. How old is she?", "react"),
            (
                "a",
                "Ten weeks. The {shelter} shelter had a whole litter, it was so hard to choose.",
                "detail",
            ),
        ],
        summary="{a} adopted a {cat_breed} kitten named {pet} from the {shelter} shelter.",
        questions=[
            ("when", "When did {a} adopt a cat?", ["announce"]),
            ("what", "What did {a} call {their} kitten?", ["announce"]),
            ("where", "Which shelter did {a}'s cat come from?", ["detail"]),
        ],
        followup=[
            ("b", "Is {pet} still climbing the curtains?"),
            ("a", "Every single night. {pet} thinks she's a mountain goat."),
        ],
    ),
    "trip": dict(
        slots=("city", "trip_activity", "companion", "mishap"),
        turns=[
            (
                "a",
                "I just got back from {city}! We spent most of the days {trip_activity}.",
                "announce",
            ),
            ("b", "That sounds incredible. Who did you go with?", "react"),
            (
                "a",
                "I went with {companion}. It was perfect apart from the day our {mishap}.",
                "detail",
            ),
        ],
        summary="{a} told {b} about a trip to {city} with {companion}, {trip_activity}.",
        questions=[
            ("when", "When did {a} travel to {city}?", ["announce"]),
            ("who", "Who went with {a} on the trip to {city}?", ["detail"]),
            ("what", "What did {a} do on holiday in {city}?", ["announce"]),
            ("what", "What went wrong during {a}'s holiday?", ["detail"]),
        ],
        followup=[
            ("a", "I'm still looking at my photos from {city} every evening."),
            ("b", "You should print some of them."),
        ],
    ),
    "job": dict(
        slots=("role", "company", "remote_days"),
        turns=[
            (
                "a",
                "So I accepted an offer as a {role} at {company}. I start on Monday!",
                "announce",
            ),
            ("b", "Congratulations! What made you decide to move?", "react"),
            (
                "a",
                "Mostly the commute, honestly. {company} lets me work from home "
                "{remote_days} days a week.",
                "detail",
            ),
        ],
        summary="{a} accepted a job as a {role} at {company}, with {remote_days} days a "
        "week at home.",
        questions=[
            ("what", "What new job did {a} take?", ["announce"]),
            ("when", "When did {a} get a new job?", ["announce"]),
            (
                "what",
                "How many days a week can {a} work from home in {their} new job?",
                ["detail"],
            ),
            ("who", "Who started working at {company}?", ["announce"]),
        ],
        followup=[
            ("b", "How are the first weeks at {company}?"),
            ("a", "Busy, but the people are lovely."),
        ],
    ),
    "class": dict(
        slots=("hobby", "venue", "teacher", "teacher_detail"),
        turns=[
            (
                "a",
                "I signed up for a {hobby} class at the {venue}, Tuesday evenings.",
                "announce",
            ),
            ("b", "Ooh, fun. How was the first lesson?", "react"),
            ("a", "Harder than it looks. Our teacher, {teacher}, {teacher_detail}.", "detail"),
        ],
        summary="{a} started a {hobby} class at the {venue}, taught by {teacher}.",
        questions=[
            ("what", "What class did {a} sign up for?", ["announce"]),
            ("who", "Who teaches {a}'s {hobby} lessons?", ["detail"]),
            ("where", "Where does {a} take {hobby} lessons?", ["announce"]),
        ],
        followup=[
            ("b", "Are you still doing {hobby}?"),
            ("a", "Yes, {teacher} says I'm improving, slowly."),
        ],
    ),
    "injury": dict(
        slots=("body_part", "sport", "weeks"),
        turns=[
            (
                "a",
                "I'm hobbling around, I sprained my {body_part} playing {sport} on Saturday.",
                "announce",
            ),
            ("b", "Ouch! Did you see someone about it?", "react"),
            ("a", "The physio said no {sport} for {weeks} weeks, which is torture.", "detail"),
        ],
        summary="{a} sprained {their} {body_part} playing {sport} and must rest for {weeks} weeks.",
        questions=[
            ("what", "How did {a} hurt {their} {body_part}?", ["announce"]),
            ("when", "When did {a} get injured?", ["announce"]),
            ("what", "How long did the physio tell {a} to stop playing?", ["detail"]),
        ],
        followup=[
            ("b", "How's the {body_part} doing?"),
            ("a", "Much better, thanks for asking."),
        ],
    ),
    "book": dict(
        slots=("book", "author", "book_reaction"),
        turns=[
            (
                "a",
                "I'm halfway through {book} by {author} and I can't put it down.",
                "announce",
            ),
            ("b", "I've heard of that one. Is it as good as people say?", "react"),
            ("a", "Better. The end of part one made me {book_reaction}.", "detail"),
        ],
        summary="{a} has been reading {book} by {author}.",
        questions=[
            ("what", "Which novel was {a} reading?", ["announce"]),
            ("who", "Who is the author of the book {a} recommended?", ["announce"]),
        ],
        followup=[
            ("a", "I finished {book}, by the way. You can borrow it."),
            ("b", "Yes please!"),
        ],
    ),
    "concert": dict(
        slots=("band", "concert_venue", "song"),
        turns=[
            ("a", "We saw {band} live at the {concert_venue} last night.", "announce"),
            ("b", "Jealous! Did they play {song}?", "react"),
            ("a", "They opened with {song} and the whole room sang along.", "detail"),
        ],
        summary="{a} went to see {band} at the {concert_venue}.",
        questions=[
            ("what", "Which band did {a} see in concert?", ["announce"]),
            ("where", "Where did {a} watch {band} play?", ["announce"]),
            ("what", "Which song did {band} open with?", ["detail"]),
        ],
    ),
    "move": dict(
        slots=("area", "plant"),
        turns=[
            (
                "a",
                "We finally moved into the new flat in {area}. Boxes everywhere.",
                "announce",
            ),
            ("b", "Finally! Is it bigger than the old place?", "react"),
            (
                "a",
                "Two bedrooms and a little balcony where I'm going to grow {plant}.",
                "detail",
            ),
        ],
        summary="{a} moved into a new flat in {area} with a balcony for growing {plant}.",
        questions=[
            ("where", "Which neighbourhood did {a} move to?", ["announce"]),
            ("when", "When did {a} move house?", ["announce"]),
            ("what", "What does {a} want to grow on {their} balcony?", ["detail"]),
        ],
        followup=[
            ("b", "Have you unpacked everything in {area} yet?"),
            ("a", "Almost. The kitchen is still chaos."),
        ],
    ),
    "cooking": dict(
        slots=("dish", "occasion", "outcome"),
        turns=[
            ("a", "I cooked {dish} for {occasion} yesterday, first time ever.", "announce"),
            ("b", "Brave! How did it turn out?", "react"),
            ("a", "{outcome}", "detail"),
        ],
        summary="{a} cooked {dish} for {occasion}.",
        questions=[
            ("what", "What did {a} make for {occasion}?", ["announce"]),
            ("when", "When did {a} cook {dish}?", ["announce"]),
        ],
    ),
    "volunteer": dict(
        slots=("org", "volunteer_task"),
        turns=[
            ("a", "I've started volunteering at {org} on Sunday mornings.", "announce"),
            ("b", "That's lovely. What do they have you doing?", "react"),
            ("a", "Mostly {volunteer_task}. It's the best part of my week.", "detail"),
        ],
        summary="{a} volunteers at {org} on Sundays, {volunteer_task}.",
        questions=[
            ("where", "Where does {a} volunteer?", ["announce"]),
            ("what", "What does {a} do as a volunteer?", ["detail"]),
            ("who", "Who started volunteering at {org}?", ["announce"]),
        ],
        followup=[("a", "Sunday at {org} was packed again."), ("b", "You're a saint.")],
    ),
    "purchase": dict(
        slots=("purchase", "purchase_use"),
        turns=[
            ("a", "I treated myself to a {purchase}.", "announce"),
            ("b", "Ooh, what made you finally buy one?", "react"),
            ("a", "I'd wanted one for years, and {purchase_use}.", "detail"),
        ],
        summary="{a} bought a {purchase}.",
        questions=[
            ("what", "What did {a} buy for {themself}?", ["announce"]),
            ("when", "When did {a} buy a {purchase}?", ["announce"]),
        ],
    ),
    "family": dict(
        slots=("relative", "relative_name", "family_news"),
        turns=[
            ("a", "My {relative} {relative_name} {family_news}!", "announce"),
            (
                "b",
                "Oh, that's wonderful news. Please congratulate {relative_name} from me.",
                "react",
            ),
        ],
        summary="{a}'s {relative} {relative_name} {family_news}.",
        questions=[
            ("who", "Whose {relative} {family_news}?", ["announce"]),
            ("what", "What is the name of {a}'s {relative}?", ["announce"]),
            ("when", "When did {a} share news about {their} {relative}?", ["announce"]),
        ],
    ),
    "race": dict(
        slots=("race", "race_time"),
        turns=[
            ("a", "I ran the {race} on Sunday!", "announce"),
            ("b", "Amazing. How did it go?", "react"),
            (
                "a",
                "I finished in {race_time}, a personal best. My legs disagree today.",
                "detail",
            ),
        ],
        summary="{a} ran the {race} in {race_time}.",
        questions=[
            ("what", "What was {a}'s finishing time in the {race}?", ["detail"]),
            ("what", "Which race did {a} run?", ["announce"]),
            ("when", "When did {a} run the {race}?", ["announce"]),
        ],
    ),
    "language": dict(
        slots=("language", "language_reason"),
        turns=[
            ("a", "I've been learning {language} on my lunch breaks.", "announce"),
            ("b", "Really? Why {language}?", "react"),
            ("a", "Because {language_reason}.", "detail"),
        ],
        summary="{a} is learning {language} because {language_reason}.",
        questions=[
            ("what", "Which language is {a} studying?", ["announce"]),
            ("what", "Why did {a} start learning {language}?", ["detail"]),
        ],
        followup=[
            ("b", "How is the {language} going?"),
            ("a", "Slowly! The grammar is brutal."),
        ],
    ),
    "exam": dict(
        slots=("exam", "exam_try"),
        turns=[
            ("a", "I passed my {exam}! On the {exam_try} attempt, but still.", "announce"),
            ("b", "That calls for a celebration!", "react"),
        ],
        summary="{a} passed {their} {exam} on the {exam_try} attempt.",
        questions=[
            ("what", "Which exam did {a} pass?", ["announce"]),
            ("what", "On which attempt did {a} pass the {exam}?", ["announce"]),
            ("when", "When did {a} pass the {exam}?", ["announce"]),
        ],
    ),
    "habit": dict(
        slots=("gave_up", "weeks"),
        turns=[
            ("a", "Small update: I've given up {gave_up}. {weeks} weeks so far.", "announce"),
            ("b", "Respect. Do you feel any different?", "react"),
            ("a", "I sleep better, but the first week was rough.", "detail"),
        ],
        summary="{a} gave up {gave_up} and has lasted {weeks} weeks.",
        questions=[
            ("what", "What did {a} quit?", ["announce"]),
            ("what", "How long has {a} gone without {gave_up}?", ["announce"]),
        ],
    ),
    "breakdown": dict(
        slots=("road", "destination"),
        turns=[
            ("a", "My car broke down on the {road} on the way to {destination}.", "announce"),
            ("b", "Oh no. Were you stuck for long?", "react"),
            ("a", "Three hours waiting for the recovery truck in the rain.", "detail"),
        ],
        summary="{a}'s car broke down on the {road} on the way to {destination}.",
        questions=[
            ("where", "Where did {a}'s car break down?", ["announce"]),
            ("what", "How long did {a} wait for the recovery truck?", ["detail"]),
        ],
    ),
}


OPENERS = [
    "Hey {b}! How was your week?",
    "Hi {b}, sorry I've been quiet, work has been mad.",
    "Morning! Got a minute to catch up?",
    "Hey you. It feels like ages since we talked.",
    "Hi! I have so much to tell you.",
    "Evening {b}! Are you free for a chat?",
]
REPLIES = [
    "Not bad at all, pretty quiet actually.",
    "Busy as always, but good. You?",
    "Always free for you. What's new?",
    "I know, it's been too long! Tell me everything.",
    "Ha, same here. Go on then.",
    "Tired, but happy. What about you?",
]
SMALL_TALK = [
    (
        "The weather has been awful lately, hasn't it?",
        "Rain every single day. I've given up on my umbrella.",
    ),
    ("Did you watch the match on Sunday?", "Only the second half. What a finish."),
    ("I've been sleeping terribly this week.", "Have you tried putting your phone away earlier?"),
    ("Work is a lot right now, lots of deadlines.", "Hang in there, it'll calm down."),
    ("I finally cleaned out the garage.", "Impressive. Mine is a lost cause."),
    ("Have you seen the new bakery on the corner?", "Yes! Their cinnamon buns are dangerous."),
    ("My neighbours are renovating again.", "Drilling at eight in the morning? Classic."),
    ("I'm trying to drink more water.", "Same. I bought one of those huge bottles."),
]
CLOSERS = [
    ("Anyway, I should get going. Talk soon!", "Speak soon, take care!"),
    ("I have to run, dinner's burning.", "Go! Catch up next week."),
    ("Let's do this again next week?", "Definitely. Same time?"),
    ("Right, bedtime for me. Night!", "Night night!"),
]


def _fill(template: str, values: dict[str, str]) -> str:
    out = template.format(**values)
    return out[0].upper() + out[1:]


def _schedule(rng: random.Random, people: list[str], kinds: list[str]) -> list[list[Any]]:
    """Each person's events, spread over the sessions: each goes to the least busy
    session that has no event of the same kind."""
    plan: list[tuple[str, str]] = []
    for person in people:
        chosen = rng.sample(kinds, 11)
        plan += [(person, k) for k in chosen]
    rng.shuffle(plan)
    per_session: list[list[Any]] = [[] for _ in range(SESSIONS)]
    for person, kind in plan:
        free = [i for i in range(SESSIONS) if all(k != kind for _, k in per_session[i])]
        fewest = min(len(per_session[i]) for i in free)
        spot = rng.choice([i for i in free if len(per_session[i]) == fewest])
        per_session[spot].append((person, kind))
    return per_session


def _pronouns(person: str, friend: str, pron: str) -> dict[str, str]:
    return {
        "a": person,
        "b": friend,
        "they": pron,
        "their": POSSESSIVE[pron],
        "themself": "herself" if pron == "she" else "himself",
    }


def _play(
    rng: random.Random,
    spec: dict[str, Any],
    person: str,
    friend: str,
    values: dict[str, str],
    say: Any,
) -> dict[str, list[int]]:
    """An event's turns said in a session: role -> the turns' positions. Some events
    can be announced in more than one way: one is used."""
    variants = [t for t in spec["turns"] if t[2] == "announce"]
    announce = rng.choice(variants)
    roles: dict[str, list[int]] = {}
    for role_speaker, text, role in spec["turns"]:
        if role == "announce" and (role_speaker, text, role) != announce:
            continue
        speaker = person if role_speaker == "a" else friend
        roles.setdefault(role, []).append(say(speaker, _fill(text, values)))
    return roles


def _ask(
    rng: random.Random,
    spec: dict[str, Any],
    values: dict[str, str],
    roles: dict[str, list[int]],
    cid: str,
    sid: str,
    questions: list[dict[str, Any]],
) -> None:
    """Two of an event's questions, with the turns that answer them."""
    for q_kind, template, ev_roles in rng.sample(spec["questions"], 2):
        turn_ids = [i for r in ev_roles for i in roles.get(r, [])]
        questions.append(
            {
                "id": f"{sid}-q{len(questions) + 1:03d}",
                "conversation": cid,
                "kind": q_kind,
                "text": _fill(template, values),
                "evidence": [[sid, i] for i in turn_ids],
            }
        )


def _slot_filler(rng: random.Random) -> Callable[[str], str]:
    """A function that gives each slot its pool's next value (pools shuffled once)."""
    pools = {k: list(v) for k, v in POOLS.items()}
    for pool in pools.values():
        rng.shuffle(pool)
    used: dict[str, int] = {}

    def take(slot: str) -> str:
        pool = pools[slot]
        i = used.get(slot, 0)
        used[slot] = i + 1
        return pool[i % len(pool)]

    return take


def build(seed: int = SEED) -> dict[str, Any]:
    rng = random.Random(seed)
    kinds = EVENTS
    take = _slot_filler(rng)
    conversations = []
    questions = []
    start = dt.date(2024, 1, 8)
    for c, (a_name, a_pron, b_name, b_pron) in enumerate(PAIRS, start=1):
        cid = f"c{c}"
        people = {a_name: a_pron, b_name: b_pron}
        per_session = _schedule(rng, list(people), sorted(kinds))
        day = start + dt.timedelta(days=rng.randrange(0, 20))
        sessions = []
        pending_followups: list[tuple[int, str, str, list[tuple[str, str]], dict[str, str]]] = []
        for s in range(SESSIONS):
            sid = f"{cid}-s{s + 1:02d}"
            first = a_name if s % 2 == 0 else b_name
            other = b_name if first == a_name else a_name
            turns: list[dict[str, str]] = []
            summary: list[str] = []

            def say(speaker: str, text: str, turns: list[dict[str, str]] = turns) -> int:
                turns.append({"speaker": speaker, "text": text})
                return len(turns) - 1

            say(first, _fill(rng.choice(OPENERS), {"b": other}))
            say(other, rng.choice(REPLIES))
            for when, owner, kind_followup, lines, values in list(pending_followups):
                if when == s:
                    friend = b_name if owner == a_name else a_name
                    for role, text in lines:
                        say(owner if role == "a" else friend, _fill(text, values))
                    pending_followups.remove((when, owner, kind_followup, lines, values))
            events = per_session[s]
            small = rng.sample(SMALL_TALK, 2)
            for n, (person, kind) in enumerate(events):
                spec = kinds[kind]
                friend = b_name if person == a_name else a_name
                values = {slot: take(slot) for slot in spec["slots"]}
                values.update(_pronouns(person, friend, people[person]))
                roles = _play(rng, spec, person, friend, values, say)
                summary.append(_fill(spec["summary"], values))
                _ask(rng, spec, values, roles, cid, sid, questions)
                if spec.get("followup") and s + 2 < SESSIONS:
                    later = rng.randrange(s + 2, SESSIONS)
                    pending_followups.append((later, person, kind, spec["followup"], values))
                if n < len(small):
                    opener, answer = small[n]
                    say(rng.choice([first, other]), opener)
                    say(other if turns[-1]["speaker"] == first else first, answer)
            closer, bye = rng.choice(CLOSERS)
            say(first, closer)
            say(other, bye)
            minute = rng.randrange(0, 180)
            sessions.append(
                {
                    "id": sid,
                    "date": day.isoformat(),
                    "start": f"{18 + minute // 60:02d}:{minute % 60:02d}",
                    "summary": " ".join(summary) or f"{first} and {other} caught up.",
                    "turns": turns,
                }
            )
            day += dt.timedelta(days=rng.randrange(7, 29))
        conversations.append({"id": cid, "speakers": [a_name, b_name], "sessions": sessions})
    return {
        "about": (
            "Generated by bench/eval/gen_conversations.py (seed "
            f"{seed}); invented people and events. See that module's docstring."
        ),
        "conversations": conversations,
        "questions": questions,
    }


def main() -> None:
    data = build()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    sessions = sum(len(c["sessions"]) for c in data["conversations"])
    print(f"wrote {OUT}: {sessions} sessions, {len(data['questions'])} questions")


if __name__ == "__main__":
    main()
