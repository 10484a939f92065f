"""Runs longer than a request (issue 21): a program run as a job, in a worker process of its own,
bounded by the VALUEGRAPH_JOB_* settings. The routes (app/routes/runs.py) call only this package;
a job runs the same service functions /backward runs (app.service)."""

from .local import FINISHED, Job, JobLimitReached, LocalJobs

__all__ = ["FINISHED", "Job", "JobLimitReached", "LocalJobs"]
