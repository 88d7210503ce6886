"""Corpora of public material: model outputs and the calls their parsers expect."""
