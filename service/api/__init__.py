"""The HTTP layer: routes, dependencies, middleware and the only place errors become HTTP."""
