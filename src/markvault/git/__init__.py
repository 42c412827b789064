"""The vault's git repository: what writes see of it, `vault sync`, the owner's automatic sync."""
