"""Generate the long-notes known-item set: ``python -m bench.eval.gen_long_notes``.

Vaults hold long notes made of many short sections (runbooks, changelogs, FAQs,
meeting logs) beside short notes on the same subjects. Here a query is one sentence
of one section of a long note, copied or lightly edited (a word dropped or changed,
as someone half-remembers it), and the long note is the one right answer; the short
notes reuse the same services, products and people, so they compete on every word.
This is where scoring whole notes could go wrong (a long note's length weighs against
it) and where scoring chunks could too (a one-line decoy wins on length alone).

Everything is generated here from templates and word lists with a fixed seed (invented
services, teams and products). Writes ``bench/eval/sets/long_notes.json``: notes
(``id``, ``title``, ``text``) and queries (``note``, ``section``, ``query``, ``from``).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "sets" / "long_notes.json"
SEED = 11

SERVICES = [
    "billing-api",
    "search-gateway",
    "auth-proxy",
    "media-store",
    "ledger-db",
    "mail-relay",
    "report-worker",
    "cart-service",
    "geo-lookup",
    "feature-flags",
    "event-bus",
    "pdf-render",
]
SYMPTOMS = [
    ("latency above two seconds", "slow responses"),
    ("error rate over five percent", "many failed requests"),
    ("disk usage above ninety percent", "a full disk"),
    ("memory climbing until the pod restarts", "memory leaks"),
    ("connection pool exhausted", "no free database connections"),
    ("certificate expiring within a week", "an expiring certificate"),
    ("queue backlog over ten thousand messages", "a growing queue"),
    ("replication lag above one minute", "lagging replicas"),
]
CHECKS = [
    "the last deploy in the release channel",
    "the dashboard for upstream timeouts",
    "the node's kernel log",
    "the slow query log",
    "recent configuration changes",
    "the load balancer health checks",
    "the garbage collector pauses",
    "the cron schedule",
]
CAUSES = [
    "a retry storm from a misconfigured client",
    "an unindexed query after a schema change",
    "log files that were never rotated",
    "a cache that stopped evicting entries",
    "a noisy neighbour on the same host",
    "an expired credential in the vault",
    "a batch job scheduled at peak hours",
    "a stuck consumer holding a lock",
]
FIXES = [
    "roll back to the previous release",
    "add the missing index and analyze the table",
    "rotate the logs and raise the retention alert",
    "restart the pods one at a time",
    "move the workload to a dedicated node",
    "renew the credential and reload the service",
    "reschedule the batch job to the night window",
    "kill the stuck consumer and replay",
]
TEAMS = ["platform", "payments", "storage", "identity", "data", "messaging"]
PRODUCTS = ["Atlas", "Beacon", "Cinder", "Drift", "Ember", "Fathom"]
CHANGES = [
    "exports to CSV now keep the column order",
    "the login page remembers the last tenant",
    "webhooks retry with exponential backoff",
    "large uploads resume after a dropped connection",
    "dark mode follows the system setting",
    "search results highlight matched words",
    "the audit log records who changed a permission",
    "invoices show the tax number",
    "the mobile app caches the last report offline",
    "API tokens can be limited to one project",
    "timezones are shown next to every timestamp",
    "bulk delete asks for confirmation",
]
FIXED = [
    "a crash when a title contained an emoji",
    "duplicate emails after a password reset",
    "a memory leak in the preview renderer",
    "wrong totals when a discount was removed",
    "a race between two tabs editing one record",
    "slow startup on machines with many fonts",
    "broken links in exported PDFs",
    "a timeout when importing more than ten thousand rows",
]
PEOPLE = ["Ana", "Bilal", "Chen", "Dara", "Emeka", "Freya", "Goran", "Hana", "Idris", "Jun"]
DECISIONS = [
    "move the weekly sync to Thursday mornings",
    "freeze new features until the audit passes",
    "hire a second on-call engineer for the night rota",
    "drop support for the old Android app",
    "write a design note before any schema change",
    "run the load test before every release",
    "keep staging data anonymised",
    "switch the status page to the new provider",
    "stop merging on Friday afternoons",
    "budget two days a sprint for bugs",
]
TOPICS = [
    "the quarterly roadmap",
    "the incident from last week",
    "the new pricing page",
    "the hiring plan",
    "the database migration",
    "customer feedback on onboarding",
    "the security review",
    "the mobile release",
]


def runbook_section(rng: random.Random, service: str) -> tuple[str, list[str]]:
    symptom, _ = rng.choice(SYMPTOMS)
    check, cause, fix = rng.choice(CHECKS), rng.choice(CAUSES), rng.choice(FIXES)
    team, minutes = rng.choice(TEAMS), rng.choice([10, 15, 20, 30, 45])
    heading = f"{service}: {symptom}"
    sentences = [
        f"When {service} shows {symptom}, look at {check} first.",
        f"Last time the cause was {cause}.",
        f"To recover, {fix}.",
        f"Page the {team} team if it is not resolved within {minutes} minutes.",
    ]
    return heading, sentences


def changelog_section(rng: random.Random, product: str, version: str) -> tuple[str, list[str]]:
    added, fixed = rng.sample(CHANGES, 2), rng.choice(FIXED)
    owner = rng.choice(PEOPLE)
    heading = f"{product} {version}"
    sentences = [
        f"In {product} {version}, {added[0]}.",
        f"Also new: {added[1]}.",
        f"Fixed {fixed}.",
        f"{owner} led the release.",
    ]
    return heading, sentences


def meeting_section(rng: random.Random, day: int, month: str) -> tuple[str, list[str]]:
    topic, decision = rng.choice(TOPICS), rng.choice(DECISIONS)
    who = rng.sample(PEOPLE, 2)
    heading = f"{day} {month}"
    sentences = [
        f"We discussed {topic}.",
        f"{who[0]} proposed that we {decision}, and the team agreed.",
        f"{who[1]} will write it up before the next meeting.",
    ]
    return heading, sentences


def _words(text: str) -> list[str]:
    return re.findall(r"[\w-]+", text.lower())


def _edit(rng: random.Random, sentence: str) -> str:
    """Half-remembered: drop one word of four letters or more, or swap two neighbours."""
    words = sentence.rstrip(".").split()
    long_ones = [i for i, w in enumerate(words) if len(w) >= 4 and i > 0]
    if rng.random() < 0.5 and long_ones:
        del words[rng.choice(long_ones)]
    elif len(words) > 3:
        i = rng.randrange(1, len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words)


def build(seed: int = SEED) -> dict[str, Any]:
    rng = random.Random(seed)
    notes: list[dict[str, Any]] = []
    long_sections: list[tuple[str, str, list[str]]] = []  # note id, heading, sentences

    def add_long(note_id: str, title: str, sections: list[tuple[str, list[str]]]) -> None:
        body = [f"# {title}", ""]
        for heading, sentences in sections:
            body += [f"## {heading}", "", " ".join(sentences), ""]
            long_sections.append((note_id, heading, sentences))
        notes.append({"id": note_id, "title": title, "text": "\n".join(body)})

    for part, services in enumerate((SERVICES[:6], SERVICES[6:]), start=1):
        sections = [runbook_section(rng, s) for s in services for _ in range(5)]
        rng.shuffle(sections)
        add_long(f"runbook-{part}", f"On-call runbook, part {part}", sections)
    for product in PRODUCTS[:4]:
        versions = [f"{major}.{minor}" for major in (1, 2) for minor in range(12)]
        sections = [changelog_section(rng, product, v) for v in versions]
        add_long(f"changelog-{product.lower()}", f"{product} changelog", sections)
    for year, months in ((2025, ("March", "April", "May")), (2026, ("June", "July", "August"))):
        sections = [meeting_section(rng, day, month) for month in months for day in (3, 10, 17, 24)]
        add_long(f"meetings-{year}", f"Team meeting log {year}", sections)
    # Short notes on the same subjects: one section's worth each.
    for n in range(60):
        kind = n % 3
        if kind == 0:
            heading, sentences = runbook_section(rng, rng.choice(SERVICES))
        elif kind == 1:
            product = rng.choice(PRODUCTS)
            heading, sentences = changelog_section(rng, product, f"3.{n}")
        else:
            heading, sentences = meeting_section(rng, rng.randrange(1, 29), "September")
        notes.append({"id": f"short-{n:02d}", "title": heading, "text": " ".join(sentences) + "\n"})
    # A known item must be identifiable: no other note may hold every word of its query
    # (an edit that drops the one word telling two sections apart is not a fair query).
    vocab = {n["id"]: set(_words(n["text"])) for n in notes}
    queries = []
    for note_id, heading, sentences in rng.sample(long_sections, len(long_sections)):
        if len(queries) == 80:
            break
        edited = rng.random() < 0.5
        for sentence in rng.sample(sentences, len(sentences)):
            query = _edit(rng, sentence) if edited else sentence
            words = set(_words(query))
            if not any(words <= v for other, v in vocab.items() if other != note_id):
                break
        else:
            continue
        queries.append(
            {
                "note": note_id,
                "section": heading,
                "query": query,
                "from": "edited" if edited else "verbatim",
            }
        )
    return {
        "about": (
            f"Generated by bench/eval/gen_long_notes.py (seed {seed}); invented services, "
            "products and people. See that module's docstring."
        ),
        "notes": notes,
        "queries": queries,
    }


def main() -> None:
    data = build()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {len(data['notes'])} notes, {len(data['queries'])} queries")


if __name__ == "__main__":
    main()
