"""The keyword query language, forgiving: any text is a query, and none is an error.

    word          ranked by BM25; plain words are all optional (any may match)
    "a phrase"    the words next to each other, in order
    prefix*       any word starting with "prefix"
    a AND b       both required          (AND, OR, NOT are upper case)
    a OR b        either (the default between plain words)
    NOT a, -a     excluded
    ( ... )       grouping

Syntax is honoured where it is clearly meant and read as words everywhere else, as
Elasticsearch's ``simple_query_string`` ignores what it cannot parse instead of failing
(people paste sentences, code and logs): a quote opens a phrase only if a later quote
closes it (an odd one out is a space, and so is a quote inside a word such as ``5"``;
apostrophes are never quotes: I'm, don't, O'Brien); a parenthesis groups only with its
partner; AND and OR are operators only between two words and NOT only before one, and
none of them in a query written all in capitals; ``-`` excludes only at the start of a
word and before a letter, a quote or a parenthesis (``-5`` and ``--verbose`` are words);
``*`` makes a prefix only at the end of a word. A query with more than ``MAX_SYNTAX``
phrases, required or excluded parts, prefixes and groups is pasted text (code, a log:
``a AND b``, ``-x`` and quotes by the dozen) and is read as its words, all optional: so
many operators are not clearly meant, and each costs the index a condition to evaluate
(a 4,000-character paste of code took 6x a 4-word query's keyword stage, bench/
bench_query_length.py); the result says so. Whatever is left has no word to look for
(``()``, ``-x`` alone): the plan then has no terms, and search finds nothing, with a
warning that says why.

A query compiles to the tokens BM25 ranks by and, when it has required or excluded
parts, a tree the index evaluates: term presence on its term-sorted postings
(``presence_sql``), phrases checked on the few top candidates' tokens (``matches``).
When phrases and required words match nothing, ``relaxed`` is the same query with its
words all optional (exclusions kept): search falls back to it and says so.

The tokens to rank by keep their repeats (a word asked for twice weighs twice, as in
Lucene and in BM25's query-term-frequency factor) and leave out the function words of
the query's language (``language.py``) among its plain words and inside its phrases,
unless nothing else is left: "what articles are there on the use of computers in
banking" ranks by "articl", "use", "comput", "bank". Required words and prefixes keep
theirs.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Literal

from markvault.markdown.tokens import prefix_token, word_tokens
from markvault.search import language
from markvault.search.query_cost import looked_up, term_reads

Occur = Literal["should", "must", "not"]

# Phrases, required and excluded parts, prefixes and groups one query may use; past it,
# the query is read as its words (see the module docstring). No query of the evaluation
# sets uses more than 2 (Cranfield, CACM, LongMemEval's 50, our own sets).
MAX_SYNTAX = 8

# A run of text between spaces and parentheses; quotes are found beforehand.
_CHUNK = re.compile(r"[^\s()]+")
_OPERATORS = ("AND", "OR", "NOT")


@dataclass
class Leaf:
    tokens: list[str]  # consecutive tokens (a phrase when more than one)
    prefix: str | None = None  # set for prefix* terms
    source: str = ""  # the words as written, for the embedding model
    words: list[str] = field(default_factory=list)  # each token's word, unstemmed
    quoted: bool = False  # written in quotes


@dataclass
class Group:
    clauses: list[tuple[Occur, Leaf | Group]] = field(default_factory=list)


@dataclass
class Plan:
    terms: list[str]  # tokens to rank by, repeats kept (prefixes not yet expanded)
    prefixes: list[str]
    root: Group
    constrained: bool  # phrases, required or excluded parts: ranking alone is not enough
    text: str  # the query with operators removed, for the embedding model
    language: str | None = None  # detected from its function words (language.detect)
    pasted: int = 0  # the syntax read as words (more than MAX_SYNTAX), else 0

    @property
    def empty(self) -> bool:
        """Nothing to look for: no word, or only excluded ones."""
        return not self.terms and not self.prefixes

    def narrowing(self) -> list[str]:
        """What narrows the result beyond "any of the words", as the user wrote it:
        phrases and required words (exclusions are not relaxed, see ``relaxed``)."""
        out: list[str] = []
        _narrowing(self.root, "should", out)
        return out

    def relaxed(self) -> Plan:
        """The query with every phrase, required word and group made optional words,
        ranked as before; its exclusions (top-level NOT and -word) are kept."""
        root = Group()
        for occur, node in self.root.clauses:
            if occur == "not":
                root.clauses.append((occur, node))
            else:
                root.clauses += [("should", leaf) for leaf in _words(node, excluded=False)]
        return Plan(
            self.terms, self.prefixes, root, not _plain(root), self.text, self.language, self.pasted
        )


# Tokens of the lexer: ("word", text), ("phrase", text), ("op", AND|OR|NOT), ("-", ""),
# ("(", ""), (")", "").
_Tok = tuple[str, str]


def _quote_pairs(query: str) -> list[tuple[int, int]]:
    """The (open, close) positions of quotes that make phrases: an opening quote not
    right after a letter or digit, paired with the next quote not right before one."""
    at = [i for i, c in enumerate(query) if c == '"']
    pairs: list[tuple[int, int]] = []
    i = 0
    while i < len(at):
        start = at[i]
        if start > 0 and query[start - 1].isalnum():
            i += 1
            continue
        j = i + 1
        while j < len(at) and at[j] + 1 < len(query) and query[at[j] + 1].isalnum():
            j += 1
        if j >= len(at):
            break
        pairs.append((start, at[j]))
        i = j + 1
    return pairs


def _paren_partners(query: str, skip: list[tuple[int, int]]) -> set[int]:
    """Positions of parentheses outside phrases that have a partner."""
    inside: set[int] = set()
    for a, b in skip:
        inside.update(range(a, b + 1))
    stack: list[int] = []
    matched: set[int] = set()
    for i, c in enumerate(query):
        if i in inside:
            continue
        if c == "(":
            stack.append(i)
        elif c == ")" and stack:
            matched.update((stack.pop(), i))
    return matched


def _lex(query: str) -> list[_Tok]:
    """The query's words, phrases, operators and parentheses, forgivingly: what is not
    clearly syntax (see the module docstring) is a word."""
    pairs = _quote_pairs(query)
    parens = _paren_partners(query, pairs) if "(" in query else set()
    shouted = not any(c.islower() for c in query)
    toks: list[_Tok] = []
    pos = 0
    for a, b in [*pairs, (len(query), len(query))]:
        _lex_plain(query, pos, a, parens, shouted, toks)
        if a < len(query):
            if toks and toks[-1][0] == "word" and toks[-1][1] == "-" and query[a - 1 : a] == "-":
                toks[-1] = ("-", "")  # -"a phrase"
            toks.append(("phrase", query[a + 1 : b]))
        pos = b + 1
    return toks


def _lex_plain(
    query: str, start: int, end: int, parens: set[int], shouted: bool, toks: list[_Tok]
) -> None:
    """Tokens of ``query[start:end]``, text outside phrases."""
    pos = start
    while pos < end:
        c = query[pos]
        if c in "()":
            if pos in parens:
                if c == "(" and toks and toks[-1] == ("word", "-") and query[pos - 1] == "-":
                    toks[-1] = ("-", "")  # -(a group)
                toks.append((c, ""))
            pos += 1
            continue
        if c.isspace():
            pos += 1
            continue
        m = _CHUNK.match(query, pos, end)
        assert m is not None  # a character that is neither space nor parenthesis
        chunk = m.group()
        pos = m.end()
        if chunk in _OPERATORS and not shouted:
            toks.append(("op", chunk))
        elif chunk == "-":
            toks.append(("word", "-"))  # a dash, unless a phrase or a group follows
        elif chunk.startswith("-") and chunk[1].isalpha():
            toks += [("-", ""), ("word", chunk[1:])]
        else:
            toks.append(("word", chunk))


def parse(query: str) -> Plan:
    """Compile a keyword query. Never raises: see the module docstring."""
    toks = _lex(query)
    pos = 0

    def operand_at(i: int) -> bool:
        return i < len(toks) and toks[i][0] in ("word", "phrase", "(", "-")

    def group(depth: int) -> Group:
        nonlocal pos
        g = Group()
        pending: Occur | None = None
        while pos < len(toks):
            kind, value = toks[pos]
            pos += 1
            if kind == ")":
                if depth > 0:
                    break
                continue  # unreachable: a lone ")" is a space
            if kind == "op":
                if value in ("AND", "OR") and g.clauses and pending is None and operand_at(pos):
                    if value == "AND":
                        last_occur, last_node = g.clauses[-1]
                        g.clauses[-1] = (
                            "must" if last_occur == "should" else last_occur,
                            last_node,
                        )
                        pending = "must"
                    else:
                        pending = "should"
                    continue
                if value == "NOT" and operand_at(pos):
                    pending = "not"
                    continue
                kind, value = "word", value  # not between words: a word
            occur: Occur = pending or "should"
            pending = None
            if kind == "-":  # the lexer puts one only before a word, phrase or group
                occur = "not"
                kind, value = toks[pos]
                pos += 1
            if kind == "(":
                sub = group(depth + 1)
                if sub.clauses:
                    g.clauses.append((occur, sub))
                continue
            _add_leaf(g, occur, value, quoted=kind == "phrase")
        return g

    root = _simplified(group(0))
    syntax = _syntax(root)
    if syntax <= MAX_SYNTAX:
        return _plan(root)
    words = Group([("should", leaf) for leaf in _words(root, excluded=True)])
    return dataclasses.replace(_plan(words), pasted=syntax)


def _syntax(node: Group) -> int:
    """How many phrases, required or excluded parts, prefixes and groups ``node`` holds."""
    count = 0
    for occur, sub in node.clauses:
        count += occur != "should"
        if isinstance(sub, Group):
            count += 1 + _syntax(sub)
        elif sub.prefix is not None or (sub.quoted and len(sub.tokens) > 1):
            count += 1
    return count


def _words(node: Leaf | Group, *, excluded: bool) -> list[Leaf]:
    """Each word of ``node``'s leaves as a leaf of its own (a prefix stays one), those
    excluded too when ``excluded``: the optional words a relaxed query (``excluded``
    False: its exclusions are kept apart) or a pasted one is read as. A word keeps its
    source as written, for the embedding model."""
    if isinstance(node, Group):
        return [
            leaf
            for occur, sub in node.clauses
            if excluded or occur != "not"
            for leaf in _words(sub, excluded=excluded)
        ]
    if node.prefix is not None or len(node.tokens) <= 1:
        return [Leaf(node.tokens, node.prefix, node.source, node.words)]
    return [Leaf([t], source=w, words=[w]) for t, w in zip(node.tokens, node.words, strict=True)]


def _add_leaf(g: Group, occur: Occur, text: str, *, quoted: bool) -> None:
    leaf = _leaf(text, quoted)
    if leaf is None:
        return
    if occur == "should" and len(leaf.tokens) > 1 and not quoted:
        # Only quotes make a phrase. A word that is several tokens - a Chinese
        # sentence (no spaces), "e-mail", "I'm" - is several optional terms.
        first = Leaf(leaf.tokens[:1], source=leaf.source, words=leaf.words[:1])
        g.clauses.append((occur, first))
        g.clauses += [
            ("should", Leaf([t], words=[w]))
            for t, w in zip(leaf.tokens[1:], leaf.words[1:], strict=True)
        ]
    else:
        g.clauses.append((occur, leaf))


def _simplified(g: Group) -> Group:
    """``g`` without groups that change nothing: a group of one clause is that clause,
    and a group of optional clauses among optional clauses is its clauses (both match
    and rank the same). "TSS (Time Sharing System)" is plain words."""
    out = Group()
    for occur, node in g.clauses:
        if isinstance(node, Group):
            node = _simplified(node)
            if len(node.clauses) == 1 and node.clauses[0][0] != "not":
                node = node.clauses[0][1]
            elif occur == "should" and all(o == "should" for o, _ in node.clauses):
                out.clauses += node.clauses
                continue
        out.clauses.append((occur, node))
    return out


def _narrowing(node: Leaf | Group, occur: Occur, out: list[str]) -> None:
    if isinstance(node, Leaf):
        if occur == "not":
            return
        if len(node.tokens) > 1:
            out.append(f'"{node.source}"')
        elif occur == "must":
            out.append(node.source or (node.words[0] if node.words else ""))
        return
    for sub_occur, sub in node.clauses:
        if sub_occur != "not":
            _narrowing(sub, sub_occur if sub_occur == "must" else occur, out)


def _plan(root: Group) -> Plan:
    """The parsed query's ranking terms (its language's function words left out),
    prefixes and text."""
    leaves: list[tuple[Occur, Leaf]] = []
    prefixes: list[str] = []
    words: list[str] = []
    _collect(root, False, leaves, prefixes, words)
    lang = language.detect(w for _, leaf in leaves for w in leaf.words)
    terms = looked_up(_ranking_terms(leaves, language.query_stopwords(lang)))
    return Plan(terms, prefixes, root, not _plain(root), " ".join(words), lang)


def _plain(root: Group) -> bool:
    """Whether a query is only optional single words (BM25 alone ranks it)."""
    return all(
        o == "should" and isinstance(n, Leaf) and len(n.tokens) <= 1 and not n.prefix
        for o, n in root.clauses
    )


def _leaf(text: str, quoted: bool) -> Leaf | None:
    if not quoted and text.endswith("*") and len(text.rstrip("*")) > 0:
        p = prefix_token(text.rstrip("*"))
        if p:
            return Leaf([], prefix=p, source=text.rstrip("*"))
    pairs = word_tokens(text)
    if not pairs:
        return None
    source = " ".join(text.split())
    return Leaf([t for _, t in pairs], source=source, words=[w for w, _ in pairs], quoted=quoted)


def _ranking_terms(leaves: list[tuple[Occur, Leaf]], stopwords: frozenset[str]) -> list[str]:
    """The tokens BM25 ranks by: every leaf's, repeats kept, without optional single
    words that are function words, nor the function words inside a phrase ("what you
    see is what you get" ranks by "see" and "get" and must still match as written);
    all of them when the query has nothing else."""
    every = [t for _, leaf in leaves for t in leaf.tokens]
    content: list[str] = []
    for occur, leaf in leaves:
        if len(leaf.tokens) > 1:
            kept = [t for t, w in zip(leaf.tokens, leaf.words, strict=True) if w not in stopwords]
            content += kept or leaf.tokens
        elif not (occur == "should" and leaf.words and leaf.words[0] in stopwords):
            content += leaf.tokens
    return content or every


def _collect(
    g: Group,
    negated: bool,
    leaves: list[tuple[Occur, Leaf]],
    prefixes: list[str],
    words: list[str],
) -> None:
    for occur, node in g.clauses:
        neg = negated or occur == "not"
        if isinstance(node, Group):
            _collect(node, neg, leaves, prefixes, words)
        elif not neg:
            leaves.append((occur, node))
            if node.prefix:
                prefixes.append(node.prefix)
            if node.source:
                # The embedding model reads the words as written, not stemmed tokens.
                words.append(node.source)


def presence_sql(
    g: Group, termids: dict[str, int], prefix_ids: dict[str, list[int]]
) -> tuple[str, bool]:
    """(SQL over ``chunk_id`` using the postings, whether it is exact); "" for no
    condition.

    One read of the postings of the query's words, grouped by chunk into the list of
    its terms, on which one expression tests each word: linear in the query however
    many words and groups it has (a subquery per word, ORed, grew much faster). Single words and
    prefixes are exact. A phrase becomes "all its words present", a necessary
    condition; under NOT it cannot be used and becomes TRUE. When the result is not
    exact, candidates must also pass ``matches``.
    """
    ids: dict[int, None] = {}
    expr, exact = _presence(g, termids, prefix_ids, ids)
    if expr == "TRUE":
        return "", exact
    if not ids:  # only words the index does not know: a constant
        return expr, exact
    reads = term_reads(ids, "chunk_id, termid")
    # Each chunk's terms as one list, then the expression on it: per chunk, not per
    # posting and word (a bool_or aggregate per word cost ~10x on a pasted query).
    return (
        f"chunk_id IN (SELECT chunk_id FROM (SELECT chunk_id, list(termid) AS t FROM ({reads}) "
        f"GROUP BY chunk_id) WHERE {expr})",
        exact,
    )


def _presence(
    g: Group, termids: dict[str, int], prefix_ids: dict[str, list[int]], ids: dict[int, None]
) -> tuple[str, bool]:
    must: list[str] = []
    should: list[str] = []
    exact = True
    for occur, node in g.clauses:
        if isinstance(node, Group):
            expr, node_exact = _presence(node, termids, prefix_ids, ids)
        else:
            expr, node_exact = _leaf_sql(node, termids, prefix_ids, ids)
        if occur == "not":
            if node_exact:
                must.append(f"NOT ({expr})")
            else:
                exact = False  # checked exactly by matches()
            continue
        exact = exact and node_exact
        (must if occur == "must" else should).append(expr)
    if should and not must:
        must.append("(" + " OR ".join(should) + ")")
    return ("(" + " AND ".join(must) + ")" if must else "TRUE"), exact


def _leaf_sql(
    leaf: Leaf, termids: dict[str, int], prefix_ids: dict[str, list[int]], ids: dict[int, None]
) -> tuple[str, bool]:
    if leaf.prefix is not None:
        found = prefix_ids.get(leaf.prefix, [])
        ids.update(dict.fromkeys(found))
        listed = ", ".join(str(int(i)) for i in found)
        return (f"list_has_any(t, [{listed}])" if found else "FALSE"), True
    if any(t not in termids for t in leaf.tokens):
        return "FALSE", True
    parts = []
    for t in dict.fromkeys(leaf.tokens):
        ids[termids[t]] = None
        parts.append(f"list_contains(t, {int(termids[t])})")
    return "(" + " AND ".join(parts) + ")", len(leaf.tokens) == 1


def leaf_tokens(g: Group) -> list[str]:
    """Every token of every word and phrase in the query, excluded ones included."""
    out: list[str] = []
    for _, node in g.clauses:
        out += leaf_tokens(node) if isinstance(node, Group) else node.tokens
    return out


def matches(g: Group, tokens: str) -> bool:
    """Does a chunk whose space-separated tokens are ``tokens`` satisfy the query?"""
    padded = f" {tokens} "
    return _matches(g, padded)


def _matches(g: Group, padded: str) -> bool:
    any_should = False
    has_should = False
    has_must = False
    for occur, node in g.clauses:
        hit = (
            _matches(node, padded)
            if isinstance(node, Group)
            else (f" {node.prefix}" in padded)
            if node.prefix is not None
            else (f" {' '.join(node.tokens)} " in padded)
        )
        if occur == "not":
            if hit:
                return False
        elif occur == "must":
            has_must = True
            if not hit:
                return False
        else:
            has_should = True
            any_should = any_should or hit
    return has_must or not has_should or any_should
