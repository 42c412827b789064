"""Attachments (PDF, Office, HTML, EPUB): their text extracted into the index, read by page."""
