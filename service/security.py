"""API keys: generation and hashing.

A key is ``metro_`` + 32 random bytes (256 bits, URL-safe base64). Only its SHA-256 is stored.
A slow password hash (bcrypt, argon2) protects *low-entropy* secrets against guessing after a
database leak; a 256-bit random token cannot be guessed either way, so a fast hash is as safe here
and lets authentication be one indexed lookup on the hash instead of a scan over every key.
"""

from __future__ import annotations

import hashlib
import secrets

KEY_PREFIX = "metro_"
_DISPLAY_PREFIX_CHARS = 12


def generate_api_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_api_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def display_prefix(key: str) -> str:
    """The start of a key, safe to store and show (it reveals 6 random characters of 43)."""
    return key[:_DISPLAY_PREFIX_CHARS]
