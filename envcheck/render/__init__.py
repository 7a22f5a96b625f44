"""Renderers: ``render(report, ...) -> str`` for the terminal, JSON and Markdown."""
