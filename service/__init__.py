"""The METRO training service: the HTTP API, its database and the glue to the ``metro`` library.

Nothing here runs at import time (no database connection, no migration): the app factory
:func:`service.main.create_app` and the ``metro`` CLI do that explicitly.
"""
