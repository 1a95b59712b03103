"""Errors of the command line."""


class UserError(Exception):
    """An error a user can cause: printed as one line, exit status 1."""
