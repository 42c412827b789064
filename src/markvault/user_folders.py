"""The user's own folders for markvault, outside every vault: the cache (indexes) and
the config folder (the trust record).

Both follow one rule. The common Linux case is answered here by the XDG rule
(``$XDG_CACHE_HOME`` or ``$XDG_CONFIG_HOME`` when absolute, else ``~/.cache`` or
``~/.config``): importing platformdirs costs a one-shot `vault search` ~10 ms. Anything
else (another system, a relative or missing home or XDG variable) is platformdirs' to
say.
"""

from __future__ import annotations

import os
import posixpath
import sys
from pathlib import Path
from typing import Literal

APP_NAME = "markvault"


def user_cache_dir() -> Path:
    """The user's cache folder for markvault, as platformdirs gives it."""
    return _user_dir("cache")


def user_config_dir() -> Path:
    """The user's config folder for markvault, as platformdirs gives it."""
    return _user_dir("config")


def _user_dir(kind: Literal["cache", "config"]) -> Path:
    if sys.platform == "linux" and "ANDROID_DATA" not in os.environ:
        xdg = os.environ.get(f"XDG_{kind.upper()}_HOME", "")
        if posixpath.isabs(xdg):
            return Path(xdg) / APP_NAME
        home = os.environ.get("HOME", "")
        if not xdg and posixpath.isabs(home):
            return Path(home) / f".{kind}" / APP_NAME
    import platformdirs

    if kind == "cache":
        return platformdirs.user_cache_path(APP_NAME)
    return platformdirs.user_config_path(APP_NAME)
