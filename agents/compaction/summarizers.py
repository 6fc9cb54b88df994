"""Build the Summarizer a spec names: `extractive` (offline) or any model spec."""

from __future__ import annotations

from agents.compaction.extractive import ExtractiveSummarizer
from agents.compaction.model_summarizer import ModelSummarizer
from agents.ports import Summarizer
from agents.providers import load_model_client
from agents.settings import SummarizerSettings

__all__ = ["load_summarizer"]


def load_summarizer(settings: SummarizerSettings) -> Summarizer:
    if settings.spec == "extractive":
        return ExtractiveSummarizer(max_chars=settings.extractive_max_chars)
    model = load_model_client(settings.spec, role="summarizer")
    return ModelSummarizer(model, max_tokens=settings.max_output_tokens, timeout_s=settings.timeout_s)
