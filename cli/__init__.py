"""The ``metro`` command line: it wires everything (the API server, the workers, the admin
commands) and is a client of a running service (``submit``, ``watch``, ``result``, ...)."""
