"""Errors the command line turns into clear messages and exit statuses."""


class UsageError(Exception):
    """Bad input from the user (a link spec, a host name, a parameter file). Exit status 2.

    Raised before anything is configured, so nothing needs undoing.
    """

    exit_status = 2


class EnvironmentProblem(Exception):
    """The machine cannot do what was asked (no root, no netem, a tool missing). Exit status 3.

    The message says what is missing and how to fix it.
    """

    exit_status = 3


class ExperimentFailed(Exception):
    """An experiment ran but its result cannot be trusted (e.g. MPTCP fell back to TCP). Exit status 4."""

    exit_status = 4
