"""Persistence: the SQLAlchemy models, engine/session factories and the migration helpers."""
