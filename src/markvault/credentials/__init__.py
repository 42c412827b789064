"""What counts as a credential (the rule tables, ``detection``), what a vault allows
(``policy``), and the scan of files already written (``scan``)."""
