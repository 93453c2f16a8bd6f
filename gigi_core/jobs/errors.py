"""Errors of the background-job port; each names the job and says what to do."""

from __future__ import annotations

from gigi_core.errors import GigiError


class JobError(GigiError):
    """A job cannot be deferred, changed or run as asked (unknown name, bad payload, ...)."""

    exit_code = 2


class JobNotFound(JobError):
    """No job has that id."""
