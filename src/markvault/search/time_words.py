"""The words of time that queries use: month and weekday names, numbers as words, units
of time and the words for "now", in English, German, French, Spanish and Italian
(``time_expressions`` reads queries with them), and the one scan that tells most queries
apart as naming no time (``may_name_a_time``): search then never loads the expressions."""

from __future__ import annotations

import re

MAX_QUERY_CHARS = 1000  # a longer "query" is a passage: its dates are not a question's

MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january",),
            ("february", "feb"),
            ("march",),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
WEEKDAYS = {
    name: i
    for i, names in enumerate(
        [
            ("monday",),
            ("tuesday", "tue", "tues"),
            ("wednesday",),
            ("thursday", "thu", "thurs"),
            ("friday", "fri"),
            ("saturday",),
            ("sunday",),
        ]
    )
    for name in names
}
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    # German, French, Spanish, Italian: the articles and small numbers
    "einem": 1,
    "einer": 1,
    "einen": 1,
    "zwei": 2,
    "drei": 3,
    "vier": 4,
    "un": 1,
    "une": 1,
    "deux": 2,
    "trois": 3,
    "quatre": 4,
    "uno": 1,
    "una": 1,
    "dos": 2,
    "tres": 3,
    "cuatro": 4,
    "due": 2,
    "tre": 3,
    "quattro": 4,
}
UNITS = {
    "day": "day",
    "days": "day",
    "week": "week",
    "weeks": "week",
    "fortnight": "fortnight",
    "fortnights": "fortnight",
    "month": "month",
    "months": "month",
    "year": "year",
    "years": "year",
    # German (dative plural after "vor"), French, Spanish, Italian
    "tag": "day",
    "tagen": "day",
    "woche": "week",
    "wochen": "week",
    "monat": "month",
    "monaten": "month",
    "jahr": "year",
    "jahren": "year",
    "jour": "day",
    "jours": "day",
    "semaine": "week",
    "semaines": "week",
    "mois": "month",
    "an": "year",
    "ans": "year",
    "année": "year",
    "années": "year",
    "día": "day",
    "días": "day",
    "dia": "day",
    "dias": "day",
    "semana": "week",
    "semanas": "week",
    "mes": "month",
    "meses": "month",
    "año": "year",
    "años": "year",
    "giorno": "day",
    "giorni": "day",
    "settimana": "week",
    "settimane": "week",
    "mese": "month",
    "mesi": "month",
    "anno": "year",
    "anni": "year",
}

# "What is it now": no window, but the newest of the matching notes hold the answer
# (a value a later session changed). English as asked ("my current", not "alternating
# current"), and the cheap part of German, French, Spanish and Italian.
NOW_PHRASES = (
    "now",
    "right now",
    "nowadays",
    "currently",
    "these days",
    "at the moment",
    "latest",
    "most recent",
    "most recently",
    "my current",
    "our current",
    "the current",
    "jetzt",
    "derzeit",
    "zurzeit",
    "momentan",
    "aktuell",
    "maintenant",
    "actuellement",
    "en ce moment",
    "ahora",
    "actualmente",
    "adesso",
    "attualmente",
)

# Words without which a query names no time (nor does one without a digit).
TRIGGER_WORDS = frozenset(
    [
        *(phrase.split()[-1] for phrase in NOW_PHRASES),
        *MONTHS,
        *WEEKDAYS,
        *(u for u in UNITS if len(u) > 2),
        "today",
        "tonight",
        "yesterday",
        "morning",
        "afternoon",
        "evening",
        "night",
        "weekend",
        "heute",
        "gestern",
        "vorgestern",
        "hier",
        "aujourd",
        "ayer",
        "hoy",
        "anteayer",
        "antier",
        "oggi",
        "ieri",
        "altroieri",
        "ans",
        "an",
    ]
)
_DIGIT = re.compile(r"\d")
_WORD = re.compile(r"\w+")


def may_name_a_time(query: str) -> bool:
    """False when ``query`` surely names no time: no digit and none of the trigger words
    (or it is a passage, longer than ``MAX_QUERY_CHARS``)."""
    if len(query) > MAX_QUERY_CHARS:
        return False
    if _DIGIT.search(query):
        return True
    return any(word in TRIGGER_WORDS for word in _WORD.findall(query.lower()))
