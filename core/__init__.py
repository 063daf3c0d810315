"""The service's shared core, under the HTTP API (``service``) and the workers (``worker``):
settings, the database models and sessions, job specs and states, and the job store, the one
place that changes a job's or a fit's state. It imports nothing of the API or the workers.
"""
