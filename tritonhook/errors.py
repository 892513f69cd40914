"""The one exception type users see.

Every failure caused by bad input (a file that is not a cubin, a store from a newer schema, an unwritable
directory, an unsupported Triton) is raised as a `TritonhookError` whose message names the file or object and
what is wrong with it, so the CLI can print one line instead of a traceback.
"""


class TritonhookError(Exception):
    """A user-facing error: the message says which file/object is wrong and why."""
