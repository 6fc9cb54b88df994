"""The README's settings table is the one the settings model writes."""

from __future__ import annotations

from pathlib import Path

from agents.settings_doc import BEGIN, END, settings_table

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_settings_table_is_the_one_the_model_writes():
    text = README.read_text()
    assert BEGIN in text and END in text, "the README lost its settings-table markers"
    shown = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert shown == settings_table(), "regenerate it: python -m agents.settings_doc"
