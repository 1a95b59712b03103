"""The package speaks in its own words: comments, docstrings and messages
name the fact (Tacker's sample request, the kubespray specification), not
the working notes or files outside this repository it was written from."""

import re

import source_files

OUTSIDE_WORDS = re.compile(
    r'\bseeds?\b|ANCHORS\.md|LAB\.md|STYLE\.md|\.\./shared|/work/',
    re.IGNORECASE)
# Files other changes are rewriting: each entry goes when its file is clean.
PENDING = set()


def outside_words(text):
    """``(line number, line)`` of each line using outside words."""
    return [(n, line.strip())
            for n, line in enumerate(text.splitlines(), 1)
            if OUTSIDE_WORDS.search(line)]


def test_the_package_says_things_in_its_own_words():
    found, stale = source_files.split_pending(
        source_files.findings(outside_words), PENDING)
    assert found == {}, (
        'say what the fact is (e.g. "the sample request of Tacker\'s '
        'kubespray specification"), not where it was read: %s' % found)
    assert stale == [], ('%s no longer use outside words: remove them from '
                         'PENDING' % ', '.join(stale))


def test_the_outside_words_are_recognised():
    text = '\n'.join([
        'placeholders of seed 001',        # 1
        "the seeds' sample",               # 2
        'see ANCHORS.md',                  # 3
        'as LAB.md says',                  # 4
        'read ../shared/design',           # 5
        'Tacker\'s kubespray specification',  # 6: the project's words
        'seedless, reseeded',              # 7: other words
    ])
    assert [n for n, _ in outside_words(text)] == [1, 2, 3, 4, 5]
