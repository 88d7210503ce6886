"""Each text format's sample call with a payload longer than the detector's head.

The detector reads a block's first :data:`~callgate.strategies.text.detector.HEAD`
characters before it trusts it; these calls (:data:`callgate.testing.text.SAMPLES` with a
long city) go past it, so the text that follows is held without being judged again.
"""

from __future__ import annotations

from callgate.testing.text import SAMPLES, TAIL_SAMPLES

LONG = "Paris, " + "the city of light and of long arguments " * 3
"""A city name that makes every sample's payload longer than the detector's head."""
LONG_CALLS = [
    (name, markup.replace("Paris", LONG))
    for table in (SAMPLES, TAIL_SAMPLES)
    for name, samples in table.items()
    for markup, _ in samples
    if "Paris" in markup
]
"""(format, markup) of every sample that names Paris, with the long city instead."""
