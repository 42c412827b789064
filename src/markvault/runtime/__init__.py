"""Where a call runs: this process's core (local_host), or the index's owner over its socket."""
