"""The one exception family the CLI turns into a one-line message and exit code 2."""


class ForgeError(Exception):
    """A problem the user can fix (bad input, missing tool or credential); one line."""
