"""The keyword query language.

    word          ranked by BM25; plain words are all optional (any may match)
    "a phrase"    the words next to each other, in order
    prefix*       any word starting with "prefix"
    a AND b       both required          (AND, OR, NOT are upper case)
    a OR b        either (the default between plain words)
    NOT a, -a     excluded
    ( ... )       grouping

A query compiles to the tokens BM25 ranks by, and, when it has phrases,
required or excluded parts, a SQL condition on a chunk's token string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import UsageError
from .text import prefix_token, tokenize

Occur = Literal["should", "must", "not"]

_LEX = re.compile(r'"[^"]*"?|\(|\)|[^\s()"]+')
# A chunk's tokens padded with spaces, so that ' word ' matches whole tokens only.
TOKENS = "(' ' || c.fts_text || ' ')"


@dataclass
class Leaf:
    tokens: list[str]  # consecutive tokens (a phrase when more than one)
    prefix: str | None = None  # set for prefix* terms


@dataclass
class Group:
    clauses: list[tuple[Occur, Leaf | Group]] = field(default_factory=list)


@dataclass
class Plan:
    terms: list[str]  # tokens to rank by (prefixes not yet expanded)
    prefixes: list[str]
    condition: str  # SQL over the chunk's padded token string; "" when none is needed
    params: list[Any]
    text: str  # the query with operators removed, for the embedding model


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
                occur, tok = "not", tok[1:]
            if tok == "(":
                sub = group(depth + 1)
                if sub.clauses:
                    g.clauses.append((occur, sub))
                continue
            leaf = _leaf(tok)
            if leaf is not None:
                g.clauses.append((occur, leaf))
        else:
            if depth > 0:
                raise UsageError("Unclosed '(' in the query.", "Add the closing ')'.")
        if pending is not None:
            raise UsageError("The query ends with an operator.", "Add a word after AND, OR or NOT.")
        return g

    root = group(0)
    terms: list[str] = []
    prefixes: list[str] = []
    words: list[str] = []
    _collect(root, False, terms, prefixes, words)
    if not terms and not prefixes:
        raise UsageError(
            "The query has no word to look for.",
            "Add a word that is not excluded: NOT and -word only remove results.",
        )
    params: list[Any] = []
    plain = all(
        o == "should" and isinstance(n, Leaf) and len(n.tokens) <= 1 and not n.prefix
        for o, n in root.clauses
    )
    condition = "" if plain else _sql(root, params)
    return Plan(terms, prefixes, condition, params, " ".join(words))


def _leaf(tok: str) -> Leaf | None:
    if tok.startswith('"'):
        toks = tokenize(tok.strip('"'))
        return Leaf(toks) if toks else None
    if tok.endswith("*") and len(tok) > 1:
        p = prefix_token(tok.rstrip("*"))
        return Leaf([], prefix=p) if p else None
    toks = tokenize(tok)
    return Leaf(toks) if toks else None


def _collect(
    g: Group, negated: bool, terms: list[str], prefixes: list[str], words: list[str]
) -> None:
    for occur, node in g.clauses:
        neg = negated or occur == "not"
        if isinstance(node, Group):
            _collect(node, neg, terms, prefixes, words)
        elif not neg:
            terms.extend(node.tokens)
            if node.prefix:
                prefixes.append(node.prefix)
                words.append(node.prefix)
            else:
                words.append(" ".join(node.tokens))


def _sql(g: Group, params: list[Any]) -> str:
    """SQL for a group; appends its parameters to ``params`` in the order they appear."""
    parts: dict[Occur, list[tuple[str, list[Any]]]] = {"must": [], "should": [], "not": []}
    for occur, node in g.clauses:
        node_params: list[Any] = []
        if isinstance(node, Group):
            expr = _sql(node, node_params)
        else:
            expr = f"contains({TOKENS}, ?)"
            pattern = node.prefix if node.prefix else " ".join(node.tokens) + " "
            node_params.append(" " + pattern)
        parts[occur].append((expr, node_params))
    terms = [(e, p) for e, p in parts["must"]]
    terms += [(f"NOT {e}", p) for e, p in parts["not"]]
    if parts["should"] and not parts["must"]:
        terms.append(
            (
                "(" + " OR ".join(e for e, _ in parts["should"]) + ")",
                [x for _, p in parts["should"] for x in p],
            )
        )
    for _, p in terms:
        params.extend(p)
    return "(" + " AND ".join(e for e, _ in terms) + ")" if terms else "TRUE"
