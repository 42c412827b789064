"""Pure rules over a note's text: parse, outline, frontmatter, edits, chunks, links, tokens."""
