"""The ``metro`` command line of a METRO service's users: ``upload``, ``submit``, ``watch``,
``cancel``, ``result``, ``download`` and ``predict``, built on the generated client
(:mod:`metro_client`) and installed with it (``pip install ./clients/python``).

It needs nothing of the server (no torch, FastAPI, SQLAlchemy or Celery). Where the server's own
package is installed too, its commands (``serve``, ``worker``, ``migrate``, ``admin``, ...)
join these under the same ``metro`` command, through the ``metro.cli`` entry-point group
(:mod:`metro_cli.app`).

Hand-written: ``clients/generate.py`` regenerates the rest of ``clients/python`` and keeps this
package as it is.
"""
