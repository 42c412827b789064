"""The tokenizer shared by notes and queries."""

from __future__ import annotations

import random

from markvault.text import normalize, prefix_token, tokenize


def test_cjk_runs_become_bigrams() -> None:
    assert tokenize("机器学习") == ["机器", "器学", "学习"]
    assert tokenize("東京タワー") == ["東京", "京タ", "タワ", "ワー"]
    assert tokenize("한국어") == ["한국", "국어"]
    assert tokenize("猫") == ["猫"]


def test_mixed_scripts_split_at_script_boundaries() -> None:
    assert tokenize("Python教程") == ["python", "教程"]


def test_accents_fold_for_latin_and_greek_but_not_cyrillic_letters() -> None:
    assert tokenize("Café naïve Ελληνικά") == tokenize("cafe naive ελληνικα")
    assert normalize("Café") == normalize("Cafe\u0301") == "cafe"  # NFC and NFD alike
    # й is a letter of its own; ё is written as е by most Russian writers.
    assert tokenize("первый") == tokenize("первого")
    assert normalize("Йод") == "йод"
    assert normalize("ёлка") == "елка"


def test_stemming_english_and_russian() -> None:
    assert tokenize("running runs") == ["run", "run"]
    assert tokenize("поиска поиску") == ["поиск", "поиск"]


def test_words_split_on_punctuation_and_underscores() -> None:
    assert tokenize("snake_case, kebab-case; a.b") == ["snake", "case", "kebab", "case", "a", "b"]


def test_prefix_token_is_normalized_not_stemmed() -> None:
    assert prefix_token("Runn") == "runn"
    assert prefix_token("two words") == ""


def test_ascii_text_is_tokenized_as_every_other_text() -> None:
    """ASCII text takes a faster pattern; its tokens are those of the general one, here
    reached by appending a Cyrillic word (non-ASCII text) and dropping its token."""
    rng = random.Random(12)
    alphabet = "abcXYZ019_-'.:#/ \t\n\x0b\x1c\x1f`*[]()\x00\x7f~"
    words = ["running", "Runs", "API2", "x_y", "don't", "C++", "e-mail", "Caf"]
    for _ in range(500):
        parts = [rng.choice(words) for _ in range(rng.randint(0, 4))]
        parts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))))
        text = " ".join(rng.sample(parts, len(parts)))
        general = tokenize(text + " \u0436")
        assert general[-1] == "\u0436"
        assert tokenize(text) == general[:-1], text


def test_text_without_cjk_is_tokenized_as_text_with_it() -> None:
    """Non-ASCII text without Han, Kana or Hangul takes a shorter way; its tokens are
    those of the general one, reached by appending a Han character and dropping it."""
    rng = random.Random(13)
    words = [
        "Café",
        "ёжик",
        "Ёлка",
        "naïve",
        "Straße",
        "ǅemal",
        "x²",
        "١٢٣",
        "Ωmega",
        "e\u0301",
        "नमस्ते",
        "ﬁle",
    ]
    alphabet = "abc019_-'. \t\n\u00a0\u2003\u2028·«»—"
    for _ in range(500):
        parts = [rng.choice(words) for _ in range(rng.randint(1, 5))]
        parts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20))))
        text = " ".join(rng.sample(parts, len(parts)))
        general = tokenize(text + " \u65e5")
        assert general[-1] == "\u65e5"
        assert tokenize(text) == general[:-1], text
