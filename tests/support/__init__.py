"""Shared test support: generators and helpers the test files import (never each other)."""
