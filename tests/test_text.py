"""The tokenizer shared by notes and queries."""

from __future__ import annotations

import random

from markvault.markdown import tokens
from markvault.markdown.tokens import normalize, prefix_token, tokenize, word_spans


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


def assert_tokens_as_in_longer_text(seed: int, words: list[str], alphabet: str, word: str) -> None:
    """Random texts of ``words`` and ``alphabet`` tokenize as they do with `` word``
    appended (whose one token is dropped): the appended word sends the text down the
    general way, the text alone may take a faster one (some only while the Unicode
    patterns are not loaded: they are unloaded before it)."""
    rng = random.Random(seed)
    for _ in range(500):
        parts = [rng.choice(words) for _ in range(rng.randint(0, 4))]
        parts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))))
        text = " ".join(rng.sample(parts, len(parts)))
        general = tokenize(f"{text} {word}")
        assert general[-1] == word
        tokens._unicode.cache_clear()  # as in a process that has not loaded the patterns
        assert tokenize(text) == general[:-1], text


def test_ascii_text_is_tokenized_as_every_other_text() -> None:
    """ASCII text takes a faster way; a Cyrillic word makes the text non-ASCII."""
    words = ["running", "Runs", "API2", "x_y", "don't", "C++", "e-mail", "Caf"]
    alphabet = "abcXYZ019_-'.:#/ \t\n\x0b\x1c\x1f`*[]()\x00\x7f~"
    assert_tokens_as_in_longer_text(12, words, alphabet, "\u0436")


def test_text_without_cjk_is_tokenized_as_text_with_it() -> None:
    """Non-ASCII text without Han, Kana or Hangul takes a shorter way; a Han character
    makes it CJK text."""
    words = ["Café", "ёжик", "Ёлка", "naïve", "Straße", "ǅemal", "x²", "١٢٣", "Ωmega"]
    words += ["e\u0301", "नमस्ते", "ﬁle"]
    alphabet = "abc019_-'. \t\n\u00a0\u2003\u2028·«»—"
    assert_tokens_as_in_longer_text(13, words, alphabet, "\u65e5")


def test_ascii_words_among_symbols_are_tokenized_as_every_other_text() -> None:
    """Text whose only non-ASCII characters separate words ("®", "’", a no-break space)
    takes the ASCII way; a Cyrillic word sends it down the general way. Symbols that
    normalization changes ("≠" decomposes, "™" is "tm") or marks must not."""
    words = ["Acme®", "it’s", "a–b", "x\u00a0y", "“quoted”", "Tool™", "a≠b", "Å", "…"]
    words += ["e\u0301", "ﬁle", "x\u0338", "•item"]
    alphabet = "abcXYZ019_-'. \t\n®’–•…\u00a0\u200e─≤�"
    assert_tokens_as_in_longer_text(14, words, alphabet, "\u0436")


def test_the_separator_test_agrees_with_the_word_pattern_on_every_character() -> None:
    """Whether a character is a letter, digit or mark is read from its general
    category (no ``regex`` import); the word pattern says the same of every character
    this Python's tables know."""
    import sys
    import unicodedata

    import regex

    word = regex.compile(r"[\p{L}\p{N}\p{M}]")
    differ: list[str] = []
    for point in range(sys.maxunicode + 1):
        char = chr(point)
        category = unicodedata.category(char)
        if category in ("Cn", "Cs"):  # unassigned here (asked of the pattern); surrogates
            continue
        if (word.match(char) is not None) != (category[0] in "LNM"):
            differ.append(f"U+{point:04X} {category}")
    assert differ == []


def test_ascii_words_among_symbols_and_emoji_selectors_are_tokenized_as_other_text() -> None:
    """Text whose characters beyond ASCII are separators and variation selectors (the
    mark of "🗂️", "⚠️") takes a way of its own; a Cyrillic word sends it down the general
    way. A selector stays in the word beside it, which is then its own token."""
    words = ["🗂️", "⚠️x", "a\ufe0fb", "Themes", "✅", "x\ufe0e", "\ufe0f\ufe0f", "it’s"]
    words += ["Acme®", "a\u0301", "Tool™", "Éa", "猫"]
    alphabet = "abcXYZ019_-'. \t\n\ufe0f\ufe0e\ufe00🗂✅’–\u00a0\x1c"
    assert_tokens_as_in_longer_text(15, words, alphabet, "\u0436")


def test_text_in_latin_letters_is_tokenized_as_every_other_text() -> None:
    """Text whose characters beyond ASCII are Latin-1 and Latin Extended letters, their
    accents, separators and selectors takes a way without the Unicode patterns; a
    Cyrillic word sends it down the general way. Every letter of those blocks is tried."""
    latin = "".join(chr(c) for c in range(0xC0, 0x250))
    words = ["Café", "naïve", "Straße", "ǅemal", "Øre", "e\u0301", "ﬁle", "x\u0338", "İstanbul"]
    words += ["Ærø", "🗂️", "a\u0301\u0327", "ŉ", "Ω"]
    alphabet = "abcXYZ019_-'. \t\n\u0301\u0308\u0327\ufe0f’–\u00a0" + latin
    assert_tokens_as_in_longer_text(17, words, alphabet, "\u0436")
    for letter in latin:  # each one, bare and accented, in a word and alone
        for text in (letter, f"x{letter}y", f"{letter}\u0301", f"{letter}\u0323\u0302s"):
            general = tokenize(f"{text} \u0436")[:-1]
            tokens._unicode.cache_clear()
            assert tokenize(text) == general, repr(text)


def test_word_spans_are_the_word_patterns_matches() -> None:
    """Highlighting finds words in a raw line as the Unicode word pattern does, by a
    pattern of the line's own word characters while the patterns are not loaded."""
    import regex

    word = regex.compile(r"[\p{L}\p{N}\p{M}]+")
    rng = random.Random(16)
    alphabet = "abcXYZ019_-'. \t\ufe0f\ufe0e🗂✅’–®™\u00a0éжØß猫\u0301≠]^\\\u02bc"
    for _ in range(2000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        tokens._unicode.cache_clear()  # as in a process that has not loaded the patterns
        spans = [(s, e) for s, e, _ in word_spans(line)]
        assert spans == [m.span() for m in word.finditer(line)], repr(line)


def test_latin_text_symbols_and_emoji_never_import_regex() -> None:
    """A search whose query and snippets are English with curly quotes, dashes, ® or
    emoji with their selector (as in a heading "🗂️ Themes"), or a European language in
    Latin letters, does not pay for the Unicode patterns (~15-35 ms in a new process)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from markvault.markdown.tokens import tokenize, word_spans\n"
        "assert tokenize('It’s the plug–in’s “settings” page®…') == "
        "['it', 's', 'the', 'plug', 'in', 's', 'set', 'page']\n"
        "assert tokenize('🗂️ Themes') == ['\\ufe0f', 'theme']\n"
        "assert [s for s, _, _ in word_spans('⚠️ Read the “docs”')] == [1, 3, 8, 13]\n"
        "assert tokenize('Grüße aus Köln, café') == ['gruss', 'aus', 'koln', 'cafe']\n"
        "print('regex' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
