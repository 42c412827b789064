"""The vault on disk: which files are notes, reading them, the only writer, what may come in."""
