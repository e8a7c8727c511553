"""Thin HTTP layer: each module owns one area and only validates, calls and formats."""
