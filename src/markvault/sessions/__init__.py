"""Claude Code sessions: transcripts read into session notes, and the capture hooks."""
