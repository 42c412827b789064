"""What counts as a credential (rules.py) and the scan of files already written (scan.py)."""
