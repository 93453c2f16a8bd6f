"""Errors of the background-job port; each names the job and says what to do."""

from __future__ import annotations

from gigi_core.errors import GigiError


class JobError(GigiError):
    """A job cannot be deferred, changed or run as asked (unknown name, bad payload, ...)."""

    exit_code = 2


class JobNotFound(JobError):
    """No job has that id."""


class JobFailed(GigiError):
    """Raise from a job to fail it at once, without its retries: retrying cannot help.

    Any exception with ``retry_job = False`` does the same (``HistoryForbidden`` does); the
    record keeps the exception's class, as for every failure.
    """

    retry_job = False
