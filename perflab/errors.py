"""The error every perflab command reports as bad input (exit 4, one line on stderr: perflab.cli),
apart from the modules that raise it: the CLI catches it without importing them."""
from __future__ import annotations


class InputError(Exception):
    """Input a command cannot use; the message is printed as one line."""
