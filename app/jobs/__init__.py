"""Runs longer than a request (issue 21): a program run as a job, in a worker process of its own,
bounded by the VALUEGRAPH_JOB_* settings. The routes (app/routes/runs.py) call only the JobQueue
interface (app.jobs.base); app.dependencies.make_jobs chooses its backend: LocalJobs (a process
pool in this server) or, with VALUEGRAPH_REDIS_URL, RedisJobs (a queue that `valuegraph worker`
processes share, app.jobs.redisjobs). A job runs the same service functions /backward runs (app.service)."""

from .base import FINISHED, JobLimitReached, JobQueue
from .local import Job, LocalJobs

__all__ = ["FINISHED", "Job", "JobLimitReached", "JobQueue", "LocalJobs"]
