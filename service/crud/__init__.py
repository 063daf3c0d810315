"""Data access. Every function that reads tenant data takes the tenant id and filters on it, so
no route can forget the scope; "not yours" and "does not exist" raise the same NotFoundError."""
