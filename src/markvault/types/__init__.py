"""Plain data passed between the layers, a module per concept: parsed notes and their
chunks (``notes``), what a search asks and answers (``search``), edits to a note's text
(``edits``), session listings and imports (``sessions``), a sync's report (``reindex``)
and what long work reports to (``progress``). Nothing here reads a file or the index, so
the faces, the wire codec and the index layer can all share it. Each module is imported
only by what uses it: a one-shot keyword search builds none of the notes' or edits'
classes (a dataclass costs ~1 ms to define).
"""

KINDS = ("note", "session", "knowledge", "document")

# The kind of an attachment's index note: a PDF, Office file, HTML page or EPUB whose
# text is indexed (attachment_sync.py); never a file the note tools may write.
ATTACHMENT_KIND = "attachment"

TRASH_DIR = ".trash"  # deleted notes, in the vault: Obsidian's own trash; hidden, so never indexed

# One read returns at most this many characters: Claude Code cuts tool results above
# ~25k tokens, and a character is at most about one token even in Chinese.
PAGE_CHARS = 20_000
MIN_PAGE_CHARS = 500
MAX_PAGE_CHARS = 80_000  # the most one MCP read may return
MAX_GET_NOTES = 50
