"""Pydantic request/response schemas (the HTTP contract), separate from the ORM models."""
