"""Queue workers that run METRO searches (Celery). See :mod:`worker.runner` for a job's life."""
