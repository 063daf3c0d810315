"""Where job data comes from: uploads (``dataset://``), allowed local files, built-ins, s3 and
https. ``uris`` checks a job's URI at submission, ``uploads`` stores and inspects uploads, and
``fetch`` downloads https:// datasets for a worker without letting a URL reach internal hosts."""
