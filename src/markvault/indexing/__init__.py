"""Keeping the index in step with the files: reconcile, the watcher, the worker pool, the feed."""
