"""The settings table of docs/configuration.md is the one the settings model writes."""

from __future__ import annotations

from agents.settings.doc import BEGIN, END, settings_table
from tests.support import ROOT

PAGE = ROOT / "docs" / "configuration.md"


def test_the_documented_settings_table_is_the_one_the_model_writes():
    text = PAGE.read_text()
    assert BEGIN in text and END in text, "docs/configuration.md lost its settings-table markers"
    shown = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert shown == settings_table(), "regenerate it: python -m agents.settings.doc"
