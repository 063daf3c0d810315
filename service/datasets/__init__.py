"""Where job data comes from, as the API checks it: ``uris`` validates a job's dataset URI at
submission (uploads, allowed local files, built-ins, s3 and https); the bytes themselves are
handled by :mod:`core.datasets`."""
