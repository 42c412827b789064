"""The keyword query language.

    word          ranked by BM25; plain words are all optional (any may match)
    "a phrase"    the words next to each other, in order
    prefix*       any word starting with "prefix"
    a AND b       both required          (AND, OR, NOT are upper case)
    a OR b        either (the default between plain words)
    NOT a, -a     excluded
    ( ... )       grouping

A query compiles to the tokens BM25 ranks by and, when it has required or excluded
parts, a tree the index evaluates: term presence on its term-sorted postings
(``presence_sql``), phrases checked on the few top candidates' tokens (``matches``).

The tokens to rank by keep their repeats (a word asked for twice weighs twice, as in
Lucene and in BM25's query-term-frequency factor) and leave out the function words of
the query's language (``language.py``) among its plain words, unless nothing else is
left: "what articles are there on the use of computers in banking" ranks by
"articl", "use", "comput", "bank". Phrases, required words and prefixes keep theirs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from markvault.errors import UsageError
from markvault.markdown.tokens import prefix_token, word_tokens
from markvault.search import language

Occur = Literal["should", "must", "not"]

_LEX = re.compile(r'-?"[^"]*"?|-?\(|\)|[^\s()"]+')


@dataclass
class Leaf:
    tokens: list[str]  # consecutive tokens (a phrase when more than one)
    prefix: str | None = None  # set for prefix* terms
    source: str = ""  # the words as written, for the embedding model
    words: list[str] = field(default_factory=list)  # each token's word, unstemmed


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


def parse(query: str) -> Plan:
    """Compile a keyword query.

    Raises:
        UsageError: unbalanced quotes or parentheses, a dangling operator, or no
            word to look for.
    """
    if not query.strip():
        raise UsageError("The query is empty.", "Give at least one word to search for.")
    if query.count('"') % 2:
        raise UsageError("Unclosed quote in the query.", 'Add the closing " or remove the quote.')
    tokens = _LEX.findall(query)
    pos = 0

    def group(depth: int) -> Group:
        nonlocal pos
        g = Group()
        pending: Occur | None = None
        while pos < len(tokens):
            tok = tokens[pos]
            pos += 1
            if tok == ")":
                if depth == 0:
                    raise UsageError("Unbalanced ')' in the query.", "Remove it or add a '('.")
                break
            if tok in ("AND", "OR"):
                if not g.clauses or pending is not None:
                    raise UsageError(
                        f"{tok} needs a word on each side.", f'Example: "cache {tok} redis".'
                    )
                if tok == "AND":
                    last_occur, last_node = g.clauses[-1]
                    g.clauses[-1] = ("must" if last_occur == "should" else last_occur, last_node)
                    pending = "must"
                else:
                    pending = "should"
                continue
            if tok == "NOT":
                pending = "not"
                continue
            occur: Occur = pending or "should"
            pending = None
            if tok.startswith("-") and len(tok) > 1:
                occur, tok = "not", tok[1:]  # -word, -"a phrase", -(a group)
            if tok == "(":
                sub = group(depth + 1)
                if sub.clauses:
                    g.clauses.append((occur, sub))
                continue
            leaf = _leaf(tok)
            if leaf is None:
                continue
            if occur == "should" and len(leaf.tokens) > 1 and not tok.startswith('"'):
                # Only quotes make a phrase. A word that is several tokens - a Chinese
                # sentence (no spaces), "e-mail" - is several optional terms.
                first = Leaf(leaf.tokens[:1], source=leaf.source, words=leaf.words[:1])
                g.clauses.append((occur, first))
                g.clauses += [
                    ("should", Leaf([t], words=[w]))
                    for t, w in zip(leaf.tokens[1:], leaf.words[1:], strict=True)
                ]
            else:
                g.clauses.append((occur, leaf))
        else:
            if depth > 0:
                raise UsageError("Unclosed '(' in the query.", "Add the closing ')'.")
        if pending is not None:
            raise UsageError("The query ends with an operator.", "Add a word after AND, OR or NOT.")
        return g

    return _plan(group(0))


def _plan(root: Group) -> Plan:
    """The parsed query's ranking terms (its language's function words left out),
    prefixes and text."""
    leaves: list[tuple[Occur, Leaf]] = []
    prefixes: list[str] = []
    words: list[str] = []
    _collect(root, False, leaves, prefixes, words)
    lang = language.detect(w for _, leaf in leaves for w in leaf.words)
    terms = _ranking_terms(leaves, language.query_stopwords(lang))
    if not terms and not prefixes:
        raise UsageError(
            "The query has no word to look for.",
            "Add a word that is not excluded: NOT and -word only remove results.",
        )
    return Plan(terms, prefixes, root, not _plain(root), " ".join(words), lang)


def _plain(root: Group) -> bool:
    """Whether a query is only optional single words (BM25 alone ranks it)."""
    return all(
        o == "should" and isinstance(n, Leaf) and len(n.tokens) <= 1 and not n.prefix
        for o, n in root.clauses
    )


def _leaf(tok: str) -> Leaf | None:
    if tok.endswith("*") and len(tok) > 1 and not tok.startswith('"'):
        p = prefix_token(tok.rstrip("*"))
        return Leaf([], prefix=p, source=tok.rstrip("*")) if p else None
    source = tok.strip('"')
    pairs = word_tokens(source)
    if not pairs:
        return None
    return Leaf([t for _, t in pairs], source=source, words=[w for w, _ in pairs])


def _ranking_terms(leaves: list[tuple[Occur, Leaf]], stopwords: frozenset[str]) -> list[str]:
    """The tokens BM25 ranks by: every leaf's, repeats kept, without optional single
    words that are function words (all of them when the query has nothing else)."""
    every = [t for _, leaf in leaves for t in leaf.tokens]
    content = [
        t
        for occur, leaf in leaves
        if not (occur == "should" and len(leaf.words) == 1 and leaf.words[0] in stopwords)
        for t in leaf.tokens
    ]
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
    """(SQL over ``chunk_id`` using the postings, whether it is exact).

    Single words and prefixes are exact. A phrase becomes "all its words present", a
    necessary condition; under NOT it cannot be used and becomes TRUE. When the result
    is not exact, candidates must also pass ``matches``.
    """
    must: list[str] = []
    should: list[str] = []
    exact = True
    for occur, node in g.clauses:
        if isinstance(node, Group):
            expr, node_exact = presence_sql(node, termids, prefix_ids)
        else:
            expr, node_exact = _leaf_sql(node, termids, prefix_ids)
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
    leaf: Leaf, termids: dict[str, int], prefix_ids: dict[str, list[int]]
) -> tuple[str, bool]:
    if leaf.prefix is not None:
        ids = prefix_ids.get(leaf.prefix, [])
        return (_has_any(ids) if ids else "FALSE"), True
    if any(t not in termids for t in leaf.tokens):
        return "FALSE", True
    parts = [_has_any([termids[t]]) for t in dict.fromkeys(leaf.tokens)]
    return "(" + " AND ".join(parts) + ")", len(leaf.tokens) == 1


def _has_any(ids: list[int]) -> str:
    # Literal term ids let DuckDB prune the term-sorted postings by row group.
    listed = ", ".join(str(int(i)) for i in ids)
    return f"chunk_id IN (SELECT chunk_id FROM postings WHERE termid IN ({listed}))"


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
