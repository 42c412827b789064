from markvault.markdown.memo import Recent


def test_the_oldest_entries_go_first_once_the_sizes_pass_the_limit() -> None:
    recent: Recent[str, int] = Recent(10)
    recent.keep("a", 1, 4)
    recent.keep("b", 2, 4)
    assert recent.find("a") == 1  # now the newest
    recent.keep("c", 3, 4)  # 12 > 10: "b", the oldest, goes
    assert (recent.find("b"), recent.find("a"), recent.find("c")) == (None, 1, 3)
    assert (len(recent), recent.size, recent.hits) == (2, 8, 3)


def test_an_entry_larger_than_the_limit_is_kept_alone() -> None:
    recent: Recent[str, int] = Recent(10)
    recent.keep("a", 1, 4)
    recent.keep("b", 2, 40)
    assert (len(recent), recent.find("b")) == (1, 2)
    recent.keep("b", 3, 5)  # kept again: its old size is taken back
    assert (recent.size, recent.find("b")) == (5, 3)
