"""Generate the mixed-vault set: ``python -m bench.eval.gen_mixed``.

A person's vault as it looks once agents write into it: notes the person wrote by hand
(a project's or a plan's facts, in their own words) and, on the same topics, sessions
with an AI assistant imported from Claude Code (``### hh:mm User`` / ``Assistant``
turns, rendered by markvault's own importer, ``sessions.session_note``). The assistant's
answers are long and general and share the topic's words with every session and note on
it; the facts are what the person wrote or said. No other set of ours puts notes and
sessions in one vault, so none checks that a rule for transcripts (the user-turn weight
of ``index/bm25.py``) leaves the notes their place.

Eight topics (two projects' code, a home server, a website's search, and four of a life:
a marathon, a kitchen, a language, a second project), each with one note and four
sessions spread over months. Seven questions a topic, by type:

- ``note``: a fact only the note holds (3 a topic); the right answer is the note;
- ``said``: a fact the person said in one session (2); the right answer is that session;
- ``update``: the note's value, changed later in a session ("I raised the limit to…");
  the session (gain 2) and then the note (gain 1);
- ``several``: one item in each of three sessions ("I tried WeasyPrint", "…ReportLab");
  all three sessions.

Questions are written in other words than the facts where a person would. Topics,
sentences and questions are written here; the values (names, numbers, products) are
drawn from word lists with a fixed seed; everything is invented. Writes
``bench/eval/sets/mixed.json``; ``mixed.py`` renders it into a vault.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "sets" / "mixed.json"
SEED = 33
SESSIONS_PER_TOPIC = 4
EXCHANGES_PER_SESSION = 3
TIPS_PER_ANSWER = 3


@dataclass(frozen=True)
class Fact:
    text: str  # with "{v}" where the value goes
    values: tuple[str, ...]
    question: str


@dataclass(frozen=True)
class Update:
    old: str  # the note's line
    new: str  # what the person later said in a session
    values: tuple[str, ...]
    question: str


@dataclass(frozen=True)
class Several:
    items: tuple[str, ...]  # one sentence per session, each with "{v}"
    values: tuple[str, ...]
    question: str


@dataclass(frozen=True)
class Topic:
    key: str
    project: str
    title: str
    intro: str
    noted: tuple[Fact, ...]
    said: tuple[Fact, ...]
    update: Update
    several: Several
    asks: tuple[str, ...]  # what the person asks the assistant
    tips: tuple[str, ...]  # what the assistant's answers are made of


def _v(*values: str) -> tuple[str, ...]:
    return values


TOPICS = (
    Topic(
        key="staging-database",
        project="billing-api",
        title="Staging database",
        intro="The staging Postgres we share with the billing team.",
        noted=(
            Fact(
                "It listens on port {v}, reachable only through the bastion host.",
                _v("6543", "5433", "6432", "7432"),
                "which port do I use to reach the staging postgres",
            ),
            Fact(
                "Nightly snapshots are kept for {v} days.",
                _v("7", "14", "21", "30"),
                "how long are staging database snapshots retained",
            ),
            Fact(
                "The read replica is called {v}.",
                _v("pg-stage-ro", "billing-replica-2", "stage-reader"),
                "what is the name of the staging read replica",
            ),
        ),
        said=(
            Fact(
                "I finally found the cause of the slow invoice query: a missing index on {v}.",
                _v("invoices.customer_id", "line_items.invoice_id", "payments.created_at"),
                "what index was missing behind the slow invoice query",
            ),
            Fact(
                "Our DBA {v} wants every migration reviewed before it touches staging.",
                _v("Ingrid", "Rafael", "Chioma", "Tomasz"),
                "who wants to review migrations before they reach staging",
            ),
        ),
        update=Update(
            "Each service may open at most {v} connections.",
            "I raised the connection limit on staging to {v} per service this morning.",
            _v("20", "40", "60", "80"),
            "what is the current per-service connection limit on staging",
        ),
        several=Several(
            (
                "Today I tried {v} to split the invoices table by month.",
                "I gave {v} a go for partitioning on staging.",
                "Another attempt at splitting the invoices: {v}.",
            ),
            _v("pg_partman", "declarative partitioning", "TimescaleDB", "Citus"),
            "which partitioning approaches have I tried for the invoices table",
        ),
        asks=(
            "Can you help me speed up the migrations on our staging database?",
            "How should I set up connection pooling for the billing API in staging?",
            "What is a safe way to copy production data into staging without customer details?",
            "Why would vacuum take so long on the staging Postgres?",
        ),
        tips=(
            "Run the migration inside a transaction so a failure leaves the schema as it was.",
            "Keep the staging database close to production in version and settings, or the "
            "tests tell you little.",
            "A connection pooler such as PgBouncer in transaction mode lets many workers share "
            "a few database connections.",
            "Check the query plan with EXPLAIN ANALYZE before adding an index, and again after.",
            "Mask names, emails and card numbers when you copy production rows into staging.",
            "Autovacuum falls behind on tables with heavy updates; tune its scale factor per "
            "table.",
            "Long-running transactions hold back vacuum, so look for idle sessions in "
            "pg_stat_activity.",
        ),
    ),
    Topic(
        key="invoice-pdfs",
        project="billing-api",
        title="Invoice PDFs",
        intro="How the billing API turns invoices into PDF files.",
        noted=(
            Fact(
                "Invoices are rendered from the template {v}.",
                _v("invoice-v3.html", "statement.jinja", "a4-invoice.html"),
                "which template renders the invoice pdfs",
            ),
            Fact(
                "The footer must show the company registration number {v}.",
                _v("HRB 20431", "SC 118842", "KVK 6620 1145"),
                "what registration number goes in the invoice footer",
            ),
            Fact(
                "Exported files go to the bucket {v}.",
                _v("billing-exports-eu", "invoice-archive", "acme-pdf-store"),
                "which bucket do the exported invoices land in",
            ),
        ),
        said=(
            Fact(
                "Our accountant {v} asked for the VAT breakdown on a separate line.",
                _v("Margot", "Kwame", "Hiroshi", "Beatriz"),
                "who asked for the VAT breakdown on its own line",
            ),
            Fact(
                "The biggest invoice we render has {v} line items, so pagination matters.",
                _v("412", "1,250", "860"),
                "how many line items does our largest invoice have",
            ),
        ),
        update=Update(
            "Font: {v}, embedded.",
            "We switched the invoice font to {v} because the old one lacked some accents.",
            _v("Inter", "Source Sans", "IBM Plex Sans", "Noto Sans"),
            "which font do the invoices use now",
        ),
        several=Several(
            (
                "I tried {v} for the PDF export today.",
                "Gave {v} a try for rendering invoices to PDF.",
                "Another PDF library I tested: {v}.",
            ),
            _v("WeasyPrint", "wkhtmltopdf", "ReportLab", "Playwright's print to PDF"),
            "which pdf libraries have I tested for the invoice export",
        ),
        asks=(
            "How do I keep a table header repeating on every page of a PDF invoice?",
            "What is the best way to embed fonts in generated PDFs?",
            "Can you review my HTML template for the invoice PDF?",
            "How can I make PDF generation faster for large invoices?",
        ),
        tips=(
            "Repeat the table header with a thead element and let the renderer break pages "
            "between rows.",
            "Embed the fonts you use, or the PDF will look different on every machine.",
            "Render one invoice per worker process so a slow one does not block the queue.",
            "Keep amounts right-aligned with tabular figures so the columns line up.",
            "Store the rendered PDF with a checksum so you can show it was not changed later.",
            "Generate a small preview first and the full document in the background.",
        ),
    ),
    Topic(
        key="home-server",
        project="homelab",
        title="Home server",
        intro="What runs at home, and where.",
        noted=(
            Fact(
                "The NAS is a {v}.",
                _v("Synology DS920+", "QNAP TS-464", "TrueNAS Mini X"),
                "what model is my nas",
            ),
            Fact(
                "The Pi-hole answers at {v}.",
                _v("192.168.1.53", "10.0.0.2", "192.168.50.5"),
                "what address does the pi-hole have",
            ),
            Fact(
                "Backups go offsite to {v} every Sunday.",
                _v("Backblaze B2", "a drive at my sister's place", "a Hetzner Storage Box"),
                "where do my offsite backups go",
            ),
        ),
        said=(
            Fact(
                "The UPS gave me {v} minutes of runtime in the last power cut.",
                _v("eleven", "twenty-five", "seventeen"),
                "how long did the ups last during the outage",
            ),
            Fact(
                "I bought a {v} to replace the flaky switch.",
                _v("TP-Link TL-SG108", "Netgear GS308", "MikroTik hEX"),
                "what network switch did I get to replace the old one",
            ),
        ),
        update=Update(
            "Plex keeps its library on the {v} volume.",
            "I moved the Plex library to the {v} volume yesterday.",
            _v("media", "fastpool", "ssd-cache", "tank"),
            "which volume holds the plex library now",
        ),
        several=Several(
            (
                "This week I set up {v} on the home server.",
                "I also got {v} running in a container.",
                "Latest addition to the home lab: {v}.",
            ),
            _v("Home Assistant", "Nextcloud", "Jellyfin", "Vaultwarden"),
            "which services have I added to my home server",
        ),
        asks=(
            "How should I lay out docker compose files for my home server?",
            "What's a good way to monitor disk health on a NAS?",
            "Can you help me set up automatic updates for my containers at home?",
            "How do I reach a home service from outside without opening ports?",
        ),
        tips=(
            "Keep each service in its own compose file with a named volume for its data.",
            "Watch SMART attributes such as reallocated and pending sectors, not only the "
            "temperature.",
            "Pin container images to versions and update them deliberately, one service at a time.",
            "A VPN such as WireGuard or Tailscale avoids opening ports on the router.",
            "Restore a backup now and then; a backup you never restored is a hope, not a plan.",
            "Give the NAS a fixed address so every container finds it after a reboot.",
        ),
    ),
    Topic(
        key="marathon-training",
        project="personal",
        title="Marathon training",
        intro="Training block for the autumn race.",
        noted=(
            Fact(
                "Race: the {v} marathon.",
                _v("Rotterdam", "Valencia", "Berlin", "Chicago"),
                "which marathon am I training for",
            ),
            Fact(
                "Target pace: {v} per kilometre.",
                _v("5:20", "4:55", "5:45"),
                "what pace per km am I aiming for",
            ),
            Fact(
                "Coach: {v}, Tuesdays at the track.",
                _v("Ellen", "Joost", "Amara"),
                "who is my running coach",
            ),
        ),
        said=(
            Fact(
                "My long run on Sunday was {v} kilometres and my knee held up.",
                _v("28", "32", "24"),
                "how far was my last sunday long run",
            ),
            Fact(
                "I switched to {v} shoes for the long runs.",
                _v("Hoka Clifton", "Asics Novablast", "Saucony Endorphin"),
                "which shoes do I wear for long runs",
            ),
        ),
        update=Update(
            "Weekly distance: about {v} km.",
            "I'm up to {v} km a week now.",
            _v("45", "55", "65", "70"),
            "how many kilometres a week am I running now",
        ),
        several=Several(
            (
                "I've been taking {v} on my long runs.",
                "Tried {v} during today's run.",
                "For fuel I also tested {v}.",
            ),
            _v("energy gels", "dates", "salted potatoes", "a sports drink"),
            "what have I tried for fuel during long runs",
        ),
        asks=(
            "Can you make me a taper plan for the last three weeks before a marathon?",
            "How should I pace the first half of a marathon?",
            "What strength exercises help runners avoid knee pain?",
            "How much should I eat the night before a long run?",
        ),
        tips=(
            "Cut the volume by about a fifth each week of the taper but keep some pace work.",
            "Start slower than goal pace for the first kilometres; the race is decided after "
            "thirty.",
            "Single-leg squats and step-downs strengthen the muscles that keep the knee stable.",
            "Practise your race-day breakfast and fuel on long runs, never for the first time "
            "on the day.",
            "Sleep matters more than any supplement during a training block.",
            "Easy runs should feel easy; most of the weekly distance belongs at a "
            "conversational pace.",
        ),
    ),
    Topic(
        key="kitchen-renovation",
        project="personal",
        title="Kitchen renovation",
        intro="Everything about redoing the kitchen.",
        noted=(
            Fact(
                "Contractor: {v}.",
                _v("Oakline Builders", "Hartmann & Sons", "BlueRidge Renovations"),
                "which contractor is doing the kitchen",
            ),
            Fact(
                "Budget: {v} including appliances.",
                _v("€18,000", "£22,500", "$31,000"),
                "what is our budget for the kitchen",
            ),
            Fact(
                "Worktop: {v}.",
                _v("oiled oak", "white quartz", "terrazzo"),
                "what material did we pick for the countertop",
            ),
        ),
        said=(
            Fact(
                "The electrician said the old wiring needs {v} new circuits.",
                _v("two", "three", "four"),
                "how many new circuits does the kitchen wiring need",
            ),
            Fact(
                "We ordered the cabinets from {v}.",
                _v("IKEA", "Howdens", "a local joiner in Delft"),
                "where did we order the kitchen cabinets",
            ),
        ),
        update=Update(
            "Planned finish: {v}.",
            "The kitchen finish date slipped to {v}.",
            _v("mid-March", "the end of April", "early June", "July"),
            "when is the kitchen supposed to be done now",
        ),
        several=Several(
            (
                "We looked at {v} for the floor today.",
                "My partner likes {v} for the kitchen floor.",
                "Another flooring option we saw: {v}.",
            ),
            _v("porcelain tiles", "cork", "polished concrete", "vinyl planks"),
            "which flooring options have we considered for the kitchen",
        ),
        asks=(
            "What order should a kitchen renovation happen in?",
            "How do I compare quotes from kitchen contractors?",
            "What should I ask before signing a renovation contract?",
            "How can we cook while the kitchen is torn out?",
        ),
        tips=(
            "Plumbing and wiring go in before the walls are closed and long before the cabinets.",
            "Compare quotes line by line; a low total often leaves out removing the old kitchen.",
            "Agree on payment stages tied to finished work, not to dates.",
            "Keep ten to fifteen percent of the budget for surprises behind the walls.",
            "A temporary kitchen with a hob plate, a kettle and a microwave gets most families "
            "through.",
            "Order the appliances early; the cabinet measurements depend on them.",
        ),
    ),
    Topic(
        key="webshop-ci",
        project="webshop",
        title="Webshop CI",
        intro="The webshop's build and deploy pipeline.",
        noted=(
            Fact(
                "CI runs on {v}.",
                _v("GitHub Actions", "GitLab CI", "Buildkite", "CircleCI"),
                "which ci system does the webshop use",
            ),
            Fact(
                "The test matrix covers Python {v}.",
                _v("3.11 and 3.12", "3.10 to 3.13", "3.12 only"),
                "which python versions does the test matrix run",
            ),
            Fact(
                "Deploys to production need approval from {v}.",
                _v("Noor", "Felix", "Oksana"),
                "who signs off on webshop releases",
            ),
        ),
        said=(
            Fact(
                "The flaky test turned out to be {v}.",
                _v("test_checkout_timeout", "test_cart_merge", "test_coupon_expiry"),
                "which test was the flaky one",
            ),
            Fact(
                "A full pipeline run takes about {v} minutes right now.",
                _v("23", "41", "17"),
                "how long does a complete pipeline run take",
            ),
        ),
        update=Update(
            "Runners: {v} self-hosted machines.",
            "We now have {v} self-hosted runners after the upgrade.",
            _v("two", "four", "six", "eight"),
            "how many self-hosted runners do we have now",
        ),
        several=Several(
            (
                "I added {v} to the pipeline today.",
                "Also wired {v} into CI.",
                "New step in the pipeline: {v}.",
            ),
            _v("a ruff lint step", "mypy", "a dependency audit", "a coverage upload"),
            "what steps have I added to the ci pipeline",
        ),
        asks=(
            "How can I make our CI pipeline faster?",
            "What is a good caching strategy for dependencies in CI?",
            "How should I deal with flaky tests in the pipeline?",
            "Can you help me split the test suite across parallel jobs?",
        ),
        tips=(
            "Cache dependencies by the hash of the lock file so a change invalidates the cache.",
            "Run the quick checks first so a lint error fails the build in a minute.",
            "Quarantine a flaky test with a ticket rather than retrying it silently.",
            "Split tests by their recorded durations so parallel jobs finish together.",
            "Keep deploy jobs apart from test jobs and require a review for production.",
            "Fail the build on the warnings you care about; ignore the rest explicitly.",
        ),
    ),
    Topic(
        key="learning-spanish",
        project="personal",
        title="Learning Spanish",
        intro="Lessons, books and the exam.",
        noted=(
            Fact(
                "Teacher: {v}, online on Thursdays.",
                _v("Lucía", "Andrés", "Carmen"),
                "who teaches my spanish lessons",
            ),
            Fact(
                "Textbook: {v}.",
                _v("Aula Internacional 2", "Nuevo Prisma B1", "Gente Hoy 1"),
                "which course book am I using for spanish",
            ),
            Fact(
                "Exam: DELE {v} in November.",
                _v("A2", "B1", "B2"),
                "which dele level am I sitting",
            ),
        ),
        said=(
            Fact(
                "My streak on the vocabulary app is at {v} days.",
                _v("143", "87", "212"),
                "how long is my vocabulary app streak",
            ),
            Fact(
                "I'm reading {v} in Spanish, slowly.",
                _v("El principito", "La sombra del viento", "Como agua para chocolate"),
                "which novel am I reading in spanish",
            ),
        ),
        update=Update(
            "Lessons: {v} per week.",
            "I've increased my lessons to {v} a week.",
            _v("one", "two", "three", "four"),
            "how many spanish lessons do I take a week now",
        ),
        several=Several(
            (
                "I started listening to {v} on my commute.",
                "Found another one for practice: {v}.",
                "Also been following {v} with subtitles.",
            ),
            _v("a news podcast", "Coffee Break Spanish", "La Casa de Papel", "Radio Ambulante"),
            "what have I been listening to or watching to practise spanish",
        ),
        asks=(
            "How can I practise the subjunctive in Spanish?",
            "What is a good routine for learning Spanish vocabulary?",
            "Can you explain when to use ser and estar?",
            "How do I prepare for the speaking part of a Spanish exam?",
        ),
        tips=(
            "Learn the subjunctive through fixed phrases first: espero que, cuando llegues, ojalá.",
            "Review vocabulary in short daily sessions with spaced repetition rather than long "
            "weekly ones.",
            "Ser describes what something is, estar how or where it is at the moment.",
            "Record yourself answering exam questions and listen for the words you avoid.",
            "Read things you would read anyway, in Spanish, and look up only what blocks the "
            "meaning.",
            "Speak from the first week; mistakes in speech fade faster than silence.",
        ),
    ),
    Topic(
        key="docs-search",
        project="docs-site",
        title="Docs site search",
        intro="Search on the documentation site.",
        noted=(
            Fact(
                "The search index is rebuilt every {v}.",
                _v("night at 02:00", "six hours", "Sunday morning"),
                "how often is the docs search index rebuilt",
            ),
            Fact(
                "We use {v} for the docs site search.",
                _v("Meilisearch", "Typesense", "OpenSearch"),
                "which search engine powers the documentation site",
            ),
            Fact(
                "Synonyms live in {v}.",
                _v("config/synonyms.yaml", "search/synonyms.txt", "the admin panel"),
                "where are the search synonyms kept",
            ),
        ),
        said=(
            Fact(
                "The top query with no results last month was {v}.",
                _v("'sso setup'", "'rate limit'", "'webhook retry'"),
                "what was the most common search with zero results",
            ),
            Fact(
                "Product wants typo tolerance only for words longer than {v} letters.",
                _v("four", "five", "six"),
                "from what word length should typo tolerance apply",
            ),
        ),
        update=Update(
            "Results per page: {v}.",
            "We changed the docs search to show {v} results per page.",
            _v("10", "20", "25", "50"),
            "how many results per page does the docs search show now",
        ),
        several=Several(
            (
                "I tuned {v} today.",
                "Also adjusted {v} in the search settings.",
                "Another change to search ranking: {v}.",
            ),
            _v("the title boost", "the stop words", "the recency weight", "code block weights"),
            "which search ranking settings have I changed",
        ),
        asks=(
            "How do I measure whether our documentation search is any good?",
            "What's the best way to handle synonyms in site search?",
            "Can you help me rank newer docs pages higher in search?",
            "How should search handle version numbers in queries?",
        ),
        tips=(
            "Log the queries with no results; they tell you what the docs are missing.",
            "Judge a handful of common queries by hand and track how often the right page is "
            "first.",
            "Keep synonyms few and explicit; broad synonym lists hurt precision.",
            "Boost the title field, but not so much that a page with the word only in its "
            "title wins.",
            "Index version numbers as whole tokens so 2.1 does not match 21.",
            "A small recency weight helps docs sites where old pages describe old behaviour.",
        ),
    ),
)

OPENERS = (
    "Good question.",
    "Happy to help with that.",
    "Sure, here is how I would approach it.",
    "There are a few things to consider.",
    "That is a common problem.",
)
CLOSERS = (
    "Let me know if you want me to go into any of these in more detail.",
    "If you share more details I can make this more specific.",
    "Would you like a step-by-step checklist for this?",
    "Tell me how it goes and we can adjust from there.",
)


def _answer(rng: random.Random, topic: Topic) -> str:
    tips = rng.sample(topic.tips, TIPS_PER_ANSWER)
    body = "\n\n".join(f"{n}. {tip}" for n, tip in enumerate(tips, start=1))
    return f"{rng.choice(OPENERS)}\n\n{body}\n\n{rng.choice(CLOSERS)}"


def _topic(rng: random.Random, t: int, topic: Topic, start: dt.date) -> dict[str, Any]:
    """One topic's note, sessions and questions."""
    note_id = topic.key
    noted = [(f, rng.choice(f.values)) for f in topic.noted]
    said = [(f, rng.choice(f.values)) for f in topic.said]
    old, new = rng.sample(topic.update.values, 2)
    several = rng.sample(topic.several.values, len(topic.several.items))
    # What each session's person says besides asking: a said fact, the update (last
    # session), an item of the "several" question (three of the four sessions).
    asides: list[list[str]] = [[] for _ in range(SESSIONS_PER_TOPIC)]
    said_in: list[int] = []  # the session of each said fact
    for fact, value in said:
        said_in.append(rng.randrange(SESSIONS_PER_TOPIC))
        asides[said_in[-1]].append(fact.text.format(v=value))
    asides[-1].append(topic.update.new.format(v=new))
    item_sessions = sorted(rng.sample(range(SESSIONS_PER_TOPIC), len(several)))
    for item, value, s in zip(topic.several.items, several, item_sessions, strict=True):
        asides[s].append(item.format(v=value))

    sessions = []
    day = start
    for s in range(SESSIONS_PER_TOPIC):
        day += dt.timedelta(days=rng.randrange(12, 40))
        minute = rng.randrange(8 * 60, 21 * 60)
        started = dt.datetime(day.year, day.month, day.day, minute // 60, minute % 60)
        asks = rng.sample(topic.asks, EXCHANGES_PER_SESSION)
        lines = list(asides[s])
        exchanges = []
        for ask in asks:
            # A fact comes before the question it led to, as people tell context first.
            prompt = " ".join([*lines[:1], ask]) if lines else ask
            lines = lines[1:]
            exchanges.append({"prompt": prompt, "answer": _answer(rng, topic)})
        for rest in lines:  # more asides than questions: said on their own
            exchanges.append({"prompt": rest, "answer": _answer(rng, topic)})
        sessions.append(
            {
                "id": f"{t:02d}{s}{rng.randrange(16**6):06x}",
                "project": topic.project,
                "started": started.isoformat(),
                "exchanges": exchanges,
            }
        )
    ids = [f"session-{s['id']}" for s in sessions]
    created = start.isoformat()
    note_lines = [
        "---",
        f"id: {note_id}",
        f"title: {json.dumps(topic.title)}",
        "kind: note",
        f"created: {created}",
        f"tags: [{topic.project}]",
        "---",
        "",
        f"# {topic.title}",
        "",
        topic.intro,
        "",
        "## Facts",
        "",
        *(f"- {f.text.format(v=value)}" for f, value in noted),
        f"- {topic.update.old.format(v=old)}",
        "",
        "## Things to remember",
        "",
        *(f"- {tip}" for tip in rng.sample(topic.tips, 2)),
        "",
    ]
    questions = [{"type": "note", "text": f.question, "gold": {note_id: 1}} for f, _ in noted]
    questions += [
        {"type": "said", "text": f.question, "gold": {ids[s]: 1}}
        for (f, _), s in zip(said, said_in, strict=True)
    ]
    questions.append(
        {"type": "update", "text": topic.update.question, "gold": {ids[-1]: 2, note_id: 1}}
    )
    questions.append(
        {
            "type": "several",
            "text": topic.several.question,
            "gold": {ids[s]: 1 for s in item_sessions},
        }
    )
    for n, q in enumerate(questions):
        q["id"] = f"m{t:02d}{n}"
    return {
        "note": {"id": note_id, "path": f"notes/{topic.title}.md", "text": "\n".join(note_lines)},
        "sessions": sessions,
        "questions": questions,
    }


def build(seed: int = SEED) -> dict[str, Any]:
    rng = random.Random(seed)
    start = dt.date(2026, 1, 5)
    notes, sessions, questions = [], [], []
    for t, topic in enumerate(TOPICS):
        part = _topic(rng, t, topic, start + dt.timedelta(days=rng.randrange(0, 60)))
        notes.append(part["note"])
        sessions += part["sessions"]
        questions += part["questions"]
    return {
        "about": (
            f"Generated by bench/eval/gen_mixed.py (seed {seed}); invented topics and "
            "values. See that module's docstring."
        ),
        "notes": notes,
        "sessions": sessions,
        "questions": questions,
    }


def main() -> None:
    data = build()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(
        f"wrote {OUT}: {len(data['notes'])} notes, {len(data['sessions'])} sessions, "
        f"{len(data['questions'])} questions"
    )


if __name__ == "__main__":
    main()
