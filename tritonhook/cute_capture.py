"""Moved to `tritonhook.cute.capture`; this re-export is kept for one release."""
from .cute.capture import *  # noqa: F401,F403
