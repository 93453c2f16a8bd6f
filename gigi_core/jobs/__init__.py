"""Background jobs, the public part: what a job function receives and what ``kernel.jobs``
returns. Register jobs with the ``register_jobs`` hook; defer them with
``await kernel.jobs.defer(name, payload, key=..., run_at=...)`` (see docs/jobs.md).
"""

from gigi_core.jobs.errors import JobError, JobFailed, JobNotFound
from gigi_core.jobs.models import STATUSES, JobContext, JobInfo, JobProgress

__all__ = [
    "STATUSES",
    "JobContext",
    "JobError",
    "JobFailed",
    "JobInfo",
    "JobNotFound",
    "JobProgress",
]
