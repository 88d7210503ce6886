"""Equivalent mutants of the core: no test can tell them from the original, and why.

Keys are mutmut's mutant names (module, function, ordinal); ``tools/mutation.py`` leaves these
out of every score and says when a name no longer exists (the function changed: recheck).
"""

from __future__ import annotations

_INTERNAL_ARGS = "the exception is private and always caught; its args are never read"
_WHITESPACE_MATCHES = (
    "the pattern [ \\t\\n\\r]* matches at every position, so the match is never None"
)

EQUIVALENT: dict[str, str] = {
    # strictjson
    "callgate.strictjson.xǁ_DuplicateKeyǁ__init____mutmut_1": _INTERNAL_ARGS,
    "callgate.strictjson.xǁ_NonFiniteǁ__init____mutmut_1": _INTERNAL_ARGS,
    "callgate.strictjson.xǁ_IntTooLongǁ__init____mutmut_1": _INTERNAL_ARGS,
    "callgate.strictjson.x__exceeds_depth__mutmut_6": (
        "the bracket count is only a shortcut: at count == limit the exact scan also says no"
    ),
    "callgate.strictjson.x__exceeds_depth__mutmut_33": (
        "'X' is not a structural character, so 'XX[{XX' and '[{' select the same characters"
    ),
    "callgate.strictjson.x__where__mutmut_4": "str.count with start None is start 0",
    "callgate.strictjson.x__where__mutmut_15": "str.rfind with start None is start 0",
    "callgate.strictjson.x__decode__mutmut_5": "re.match with no pos starts at 0",
    "callgate.strictjson.x__decode__mutmut_9": _WHITESPACE_MATCHES,
    "callgate.strictjson.x__decode__mutmut_10": _WHITESPACE_MATCHES,
    "callgate.strictjson.x__decode__mutmut_92": _WHITESPACE_MATCHES,
}
