"""Shared generators and helpers of the test suites (test modules never import each other)."""
