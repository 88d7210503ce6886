"""Equivalent mutants of the core: no test can tell them from the original, and why.

Keys are mutmut's mutant names (module, function, ordinal); ``tools/mutation.py`` leaves these
out of every score and says when a name no longer exists (the function changed: recheck).
"""

from __future__ import annotations

_INTERNAL_ARGS = "the exception is private and always caught; its args are never read"
_WHITESPACE_MATCHES = (
    "the pattern [ \\t\\n\\r]* matches at every position, so the match is never None"
)

_FAST_PATH = (
    "the fast path of fragment() only short-cuts the general path, which reaches the same "
    "slot, size and transition"
)
_NO_OUTPUT = "the transition fired has no finding, so its message is never read"
_RESLOTTED = "a check finding without a slot is given the slot's key before it is recorded"
_COUNTER = "the version is a change counter: readers compare it for equality, not by value"
_AND_OR = "parse_arguments returns exactly one of (object, finding), so 'and' and 'or' agree"
_SAME_LOOKUP = "the fallback Interpreter.transition does the same (state, event) lookup"
_REJECT_MESSAGE = (
    "the reject transition's output is check_finding, which the gate does not record (the "
    "check's own finding was recorded first), so its message is never read"
)
_G = "callgate.gate.turn.xǁTurnGateǁ"
_GR = "callgate.gate._release.xǁReleaseRulesǁ"
_GT = "callgate.gate._textcalls.xǁTextCallsǁ"
_O = "callgate.strategies.openai.xǁOpenAIStrategyǁ"
_OPENAI_FAST = (
    "the fast path for a fragment-only entry short-cuts _key() and _tool_call, which do the "
    "same for such an entry (no identity, one fragment)"
)
_A = "callgate.strategies.anthropic.xǁAnthropicStrategyǁ"
_DISAGREE = "disagree() reads only whether 'what' is 'identity'; any other value is a mismatch"
_D = "callgate.strategies.text.detector.xǁDetectorǁ"
_HOLD = "the reasoning hold is at least len('</think>') - 1, never zero"
_NO_TOKEN = "a tail of characters that no token contains completes none"
_TRUTH = "only the flag's truth is read, and None is false like False"
_FOLD = (
    "the parts are folded into one string here or by the next read (raw_arguments): the "
    "text, the counts and what a reader of the parts reads are the same"
)

_VERDICT = (
    "unreachable: when the turn completes every slot is validated or blocked, and a "
    "blocked slot has already blocked the turn"
)
_NO_GROWTH = (
    "a repeat is compared with the original, never appended, so it cannot outgrow the "
    "limits the original kept"
)
_CHECK_OUTPUT = (
    "the gate records the check's own finding (schema_invalid, invalid_json, ...); the "
    "table's check_finding only names it for the diagrams"
)
_HOLDS_ONLY = "the driver observes 'broken' only while it holds (holding or pending)"
_NOT_WHILE_HOLDING = (
    "while it holds the driver observes 'broken', never 'text', and fires 'end' only once "
    "it holds nothing"
)

_DEC = "callgate.driver.decision.xǁDecisionǁ"
_QUIET_OFF = (
    "the quiet-step shortcut is only turned off: the full step answers as the quiet one "
    "does (tests/driver/test_quiet_step.py)"
)
_CAST = "typing.cast returns its value, whatever type it names"
_SETTLED_ALIKE = (
    "released and flowing are both settled: no status, the same transitions onward, so "
    "seeing another driver's call as text (or repeating 'foreign') shows nothing else"
)
_BLOCKED_HAS_ERROR = (
    "unreachable: a blocked call's turn always holds an error finding (past the findings "
    "limit, limit_exceeded), so the fallback finding is never made"
)
_L = "callgate.ledger."
_SQL_CASE = "SQLite reads keywords, table and column names and journal modes in any case"
_Q = "callgate.ledger.sqlite.xǁSQLiteStoreǁ"
_KEY_SPELLING = (
    "the call key is only compared with keys the same code made: another spelling of the "
    "same JSON gives another hash for every call alike"
)
_KEY_JSON = "every part of a call key (ids, turn, slot, name, JSON text) is JSON already"
_RACE = (
    "a start record of this ledger's own running call is met only when two threads start "
    "one call at once: in turn, get() answers it before the store is asked"
)

TABLE_EQUIVALENT: dict[str, str] = {
    "display: source --broken--> released: target released -> executed": _HOLDS_ONLY,
    "display: holding --text--> released: target released -> executed": _NOT_WHILE_HOLDING,
    "display: holding --end--> ended: target ended -> flowing": _NOT_WHILE_HOLDING,
    "turn: complete --fail--> blocked: target blocked -> not_applicable": _VERDICT,
    "slot: replaying --overflow--> blocked: output dropped": _NO_GROWTH,
    "slot: replaying --overflow--> blocked: target blocked -> unseen": _NO_GROWTH,
    "slot: terminal --reject--> blocked: output dropped": _CHECK_OUTPUT,
}
"""Table mutants (``tools/mutation.py tables``) no input can tell apart, keyed by table,
transition and edit."""

_R = "callgate.gate.repair.x_"
_NEVER_PARSES = (
    "the readings differ only when the comma's stretch holds nothing but blanks before it (or "
    "one character at the text's start): after a string only a comma after a comma reads "
    "otherwise, and at the start the text is left opening with ']' or '}': neither ever parses"
)
_STRING_END = (
    "a string piece ends with its closing quote, and no text holding '\"' is in '[{,', so "
    "the comma is read as trailing alike"
)
_X_OUTSIDE = "an 'X' outside strings never parses, so a text it changes has no repair either way"
_CLOSED = (
    "a quote at or after the last whole string is one that never closes: find and rfind agree "
    "on whether there is one, and one at index 0 starts a string, never an object"
)

_V = "callgate.strategies.text._scan.xǁ_Blockǁ"
_VE = "callgate.strategies.text._scan.xǁ_ValueEndǁ"
_FALSY = "the flag is read only for its truth, and None is false like False and ''"


EQUIVALENT: dict[str, str] = {
    # strictjson
    "callgate.gate.strictjson.xǁ_DuplicateKeyǁ__init____mutmut_1": _INTERNAL_ARGS,
    "callgate.gate.strictjson.xǁ_NonFiniteǁ__init____mutmut_1": _INTERNAL_ARGS,
    "callgate.gate.strictjson.xǁ_IntTooLongǁ__init____mutmut_1": _INTERNAL_ARGS,
    "callgate.gate.strictjson.x__exceeds_depth__mutmut_6": (
        "the bracket count is only a shortcut: at count == limit the exact scan also says no"
    ),
    "callgate.gate.strictjson.x__where__mutmut_4": "str.count with start None is start 0",
    "callgate.gate.strictjson.x__where__mutmut_15": "str.rfind with start None is start 0",
    "callgate.gate.strictjson.x_parse_arguments__mutmut_23": (
        "ASCII text holds no raw surrogate: the search only finds none"
    ),
    "callgate.gate.strictjson.x_parse_arguments__mutmut_44": (
        "without a backslash-u escape no decoded string holds a surrogate: the walk finds none"
    ),
    "callgate.gate.strictjson.x_parse_arguments__mutmut_25": (
        "text that encodes holds no surrogate: the search it then takes finds none"
    ),
    "callgate.gate.strictjson.x__exceeds_depth__mutmut_14": (
        "the strings are cut out only so that their brackets are not counted: a stand-in "
        "with no bracket counts the same"
    ),
    "callgate.gate.strictjson.x__exceeds_depth__mutmut_26": (
        "the default is read only when no bracket is outside a string, and 0 and 1 are both >= 0"
    ),
    "callgate.gate.strictjson.x__scan_depth__mutmut_26": (
        "the structural pattern never matches an 'X': the test reads every match alike"
    ),
    "callgate.gate.strictjson.x__fast_decode__mutmut_4": (
        "the interpreter's digit limit is 0 or at least 640, never 1"
    ),
    "callgate.gate.strictjson.x__fast_decode__mutmut_5": (
        "with no digit limit msgspec still refuses an integer past 4,300 digits (its own cap), "
        "so the strict read decides it as before"
    ),
    "callgate.gate.strictjson.x__too_deep__mutmut_1": (
        "with the bracket bound at the limit the walk finds at most that many levels: never "
        "deeper either way"
    ),
    **{
        f"callgate.gate.strictjson.x_{name}__mutmut_16": (
            "the text's depth scan says no at once when the bracket bound is at the limit"
        )
        for name in ("parse_arguments", "parse_value")
    },
    "callgate.gate.strictjson.x__encodes__mutmut_3": "Python's codec names ignore case",
    "callgate.gate.strictjson.x__encodes__mutmut_5": (
        "text said not to encode only takes the surrogate search, which finds none"
    ),
    "callgate.gate.strictjson.x__raw_decode__mutmut_1": (
        "the interpreter's digit limit is 0 or at least 640, never 1"
    ),
    "callgate.gate.strictjson.x__raw_decode__mutmut_3": (
        "at a limit equal to callgate's both decoders refuse the same integers: the strict "
        "hook's path gives the same value or finding, only slower"
    ),
    "callgate.gate.strictjson.x__decode__mutmut_5": "re.match with no pos starts at 0",
    "callgate.gate.strictjson.x__decode__mutmut_9": _WHITESPACE_MATCHES,
    "callgate.gate.strictjson.x__decode__mutmut_10": _WHITESPACE_MATCHES,
    "callgate.gate.strictjson.x__decode__mutmut_92": _WHITESPACE_MATCHES,
    # gate
    **{
        f"callgate.gate.refs.x_call_order__mutmut_{n}": (
            "call_order is only a sort key: no reference's key still sorts after every "
            "reference's (native (0, i, 0), text (1, b, n)) and ties with every other None"
        )
        for n in (4, 5, 6)
    },
    "callgate.gate.refs.xǁNativeRefǁorder__mutmut_2": (
        "the third place only breaks ties of the first two: every native key has the same one, "
        "and against a text key (1, b, n) the first place already decides"
    ),
    **{f"callgate.gate._slots.xǁBaseSlotǁ__init____mutmut_{n}": _TRUTH for n in (6, 14, 20)},
    "callgate.gate._slots.xǁBaseSlotǁ__init____mutmut_13": (
        "folds is only compared with an earlier reading of itself, to see a reader's cursor reset"
    ),
    **{
        f"callgate.gate._slots.xǁBaseSlotǁ__init____mutmut_{n}": (
            "room is set by the slot's first transition (its grant settled), before an append "
            "reads it"
        )
        for n in (18, 19)
    },
    **{
        f"callgate.gate._slots.xǁBaseSlotǁ__init____mutmut_{n}": (
            "mark is read only while a grant is open, and set when the grant is given"
        )
        for n in (22, 23)
    },
    **{
        f"callgate.gate._slots.xǁBaseSlotǁ__init____mutmut_{n}": (
            "the repeat and its position are read only while replaying, entered after "
            "restart assigns both"
        )
        for n in (25, 27)
    },
    **{f"{_G}identity__mutmut_{n}": _NO_OUTPUT for n in (64, 70, 82, 88)},
    **{
        f"{_G}identity__mutmut_{n}": (
            "with the value absent or the slot's own (a clash was ruled out before), the "
            "value assigned is the one already there; an id map entry for None is never read"
        )
        for n in (71, 76)
    },
    **{f"{_G}fragment__mutmut_{n}": _SAME_LOOKUP for n in (89, 90, 94, 95)},
    f"{_G}fragment__mutmut_61": "len(text) equals its UTF-8 length for ASCII text",
    **{
        f"{_G}fragment__mutmut_{n}": (
            "a fragment that fills its grant exactly takes the counted path instead, which "
            "appends it all the same"
        )
        for n in (14, 15)
    },
    **{f"{_G}fragment__mutmut_{n}": _NO_OUTPUT for n in (52, 58)},
    f"{_G}fragment__mutmut_75": (
        "a turn filled exactly settles the other grants first; the check after settling "
        "decides, as before"
    ),
    f"{_G}_grant__mutmut_13": (
        "a grant of a fractional size only changes how often the counted path runs, "
        "never what it decides"
    ),
    **{f"{_G}_apply__mutmut_{n}": _FOLD for n in (2, 4, 5)},
    f"{_G}_settle__mutmut_7": (
        "no grant has fewer parts than its mark: a tail of one part is counted the same "
        "alone, joined, or as the whole less the counted head, and folding it is the fold "
        "the next read makes"
    ),
    f"{_G}_settle__mutmut_12": _FOLD,
    f"{_G}_settle__mutmut_24": "a tail of no parts counts no bytes, joined or not",
    "callgate.gate._slots.x_utf8_size__mutmut_1": (
        "len(text) equals its UTF-8 length for ASCII text"
    ),
    f"{_G}confirm__mutmut_5": (
        "while replaying, fragments go to the repeat, so the raw arguments still equal "
        "the original the repeat is compared with"
    ),
    f"{_G}close__mutmut_6": "an empty and a None message both fall back to the table's text",
    f"{_GR}_early__mutmut_14": _AND_OR,
    **{
        f"{_GR}_early__mutmut_{n}": "an early finding is never reported, only its absence read"
        for n in (20, 23)
    },
    f"{_G}_clash__mutmut_11": (
        "with both ids None, or the slot's own id, the owner lookup finds no other slot"
    ),
    **{f"{_G}_replay__mutmut_{n}": _NO_OUTPUT for n in (19, 25)},
    f"{_G}_check__mutmut_2": "arguments is assigned on every path that reads it",
    **{f"{_G}_check__mutmut_{n}": _RESLOTTED for n in (7, 10, 18, 21, 39, 42)},
    f"{_G}_check__mutmut_33": _AND_OR,
    **{f"{_G}_check__mutmut_{n}": _NO_OUTPUT for n in (47, 53)},
    **{f"{_G}_check__mutmut_{n}": _REJECT_MESSAGE for n in (67, 73)},
    **{f"{_GT}text_call__mutmut_{n}": _NO_OUTPUT for n in (14, 20, 23, 29, 41, 47)},
    **{f"{_GT}text_call__mutmut_{n}": _REJECT_MESSAGE for n in (57, 63)},
    f"{_GT}text_call__mutmut_50": "ensure_ascii=None is false, as False is",
    f"{_GT}_text_evidence__mutmut_7": (
        "a blocked turn is final, so the changed test only skips the early return where "
        "the walk finds nothing (text not settled, no per-call rule, turn undecided)"
    ),
    f"{_G}_late_fragment__mutmut_1": _TRUTH,
    **{
        f"{_G}_late_fragment__mutmut_{n}": (
            "below the findings limit a slot its checks rejected always has its check "
            "finding recorded, so the search always finds one"
        )
        for n in (16, 18)
    },
    f"{_G}_apply__mutmut_10": _COUNTER,
    f"{_GT}text_settled__mutmut_5": _COUNTER,
    f"{_GR}ordered_slots__mutmut_1": (
        "the cache is only skipped: the slots are sorted again into an equal list"
    ),
    f"{_G}_fire_turn__mutmut_9": _COUNTER,
    f"{_G}_fire_turn__mutmut_1": (
        "every turn transition with a finding is fired with its own message"
    ),
    f"{_G}_fire_turn__mutmut_20": "the key passed with a turn finding is a slot index or None",
    **{f"{_G}__init____mutmut_{n}": _TRUTH for n in (29, 44)},
    f"{_G}__init____mutmut_46": (
        "the first turn reason is read only once done_seen says a turn-level terminal "
        "arrived, and that terminal assigns it"
    ),
    "callgate.gate._slots.xǁChangesǁ__init____mutmut_2": _COUNTER,
    **{
        f"callgate.gate._verdict.xǁTurnVerdictǁ_verdict__mutmut_{n}": (
            "unreachable: when the turn completes every slot is validated or blocked, and a "
            "blocked slot has already blocked the turn"
        )
        for n in (7, 8, 9)
    },
    # openai
    f"{_O}_tool_call__mutmut_3": "a dict is a Mapping: the type test only short-cuts isinstance",
    **{
        f"{_O}_tool_call__mutmut_{n}": (
            "the problem's slot is never read: the gate is given the entry's own key"
        )
        for n in (47, 49)
    },
    **{
        f"{_O}_choice__mutmut_{n}": _OPENAI_FAST
        for n in (85, 86, 88, 89, 90, 91, 106, 107, 108, 109, 113, 114, 115, 116, 117)
    },
    f"{_O}_choice__mutmut_68": "a delta has one content key, and nothing is shown before it",
    **{
        f"{_O}reader__mutmut_{n}": (
            "a choice without an index leaves the fast path for accumulate(), which reads it "
            "as choice 0, as the fast path would"
        )
        for n in (32, 34)
    },
    **{
        f"{_O}{function}__mutmut_{n}": (
            "acc.ended is read only for its truth (the buffer's test of chosen_done(), "
            "another choice's 'if other.ended'), and None is false like False"
        )
        for function, n in (("accumulate", 2), ("_choice", 4))
    },
    "callgate.strategies._openai_choice.xǁ_Accumulatorǁother__mutmut_10": (
        "only the chosen choice's gate is asked about a chunk without choices: another "
        "choice's on_stray is never read"
    ),
    "callgate.strategies._openai_choice.x__content__mutmut_26": (
        "once content is parts the string pieces are never read again"
    ),
    # anthropic
    f"{_A}_delta__mutmut_89": (
        "past the text limit the buffer keeps none of the text a chunk returns"
    ),
    f"{_A}fast_add__mutmut_56": (
        "an ASCII delta's UTF-8 byte count is its length: encoding it counts the same"
    ),
    f"{_A}fast_add__mutmut_58": (
        "a text delta that fills the text limit exactly takes the buffer's path, whose "
        "TurnGate.text keeps and counts it all the same"
    ),
    **{
        f"{_A}fast_add__mutmut_{n}": (
            "a delta that fills its grant exactly takes the buffer's path, whose "
            "TurnGate.fragment appends it within the grant all the same"
        )
        for n in (31, 32)
    },
    **{
        f"{_A}fast_add__mutmut_{n}": (
            "the cache of a text block's pieces only saves a lookup: setdefault gives the "
            "same list of acc.parts"
        )
        for n in (60, 61)
    },
    **{
        f"{_A}_start__mutmut_{n}": (
            "a tool block's slot is read only by the buffer's fast add: None only sends its "
            "deltas down the buffer's path, which appends them alike"
        )
        for n in (47, 48)
    },
    **{
        f"{_A}replay__mutmut_{n}": (
            "the start's content is set to [] after the envelope, so a message content kept "
            "in the envelope is replaced either way"
        )
        for n in (3, 4)
    },
    "callgate.strategies.anthropic.x__restated_input__mutmut_12": (
        "ensure_ascii=None is false, as False is"
    ),
    "callgate.strategies.anthropic.x__restated_input__mutmut_20": _DISAGREE,
    "callgate.strategies.anthropic.x__restated_input__mutmut_25": _DISAGREE,
    "callgate.strategies.anthropic.x__restated_input__mutmut_26": _DISAGREE,
    "callgate.strategies.anthropic.xǁ_Accumulatorǁ__init____mutmut_16": (
        "a usage that is not the envelope's is replaced by a copy before it is updated"
    ),
    **{
        f"{_A}accumulate__mutmut_{n}": (
            "the message's content is always replaced by the blocks, so message_start's "
            "content is dropped either way"
        )
        for n in (50, 52, 53, 54)
    },
    # detector
    **{
        f"{_D}abandon__mutmut_{n}": (
            "showing the opener, never blank, has already marked text as seen"
        )
        for n in (16, 17)
    },
    **{f"{_D}feed_reasoning__mutmut_{n}": _HOLD for n in (10, 12)},
    **{f"{_D}_reasoning__mutmut_{n}": _HOLD for n in (16, 18)},
    f"{_D}reset__mutmut_15": _TRUTH,
    f"{_D}feed__mutmut_1": (
        "a delta the fast path declines goes through the general path, which shows a delta "
        "with no marker whole and keeps it in the content the same way"
    ),
    f"{_D}_in_block__mutmut_18": "a head of HEAD characters is full: the check reads nothing new",
    f"{_D}_in_block__mutmut_23": (
        "past HEAD characters the head is full and was viable: the check finds no break"
    ),
    f"{_D}_in_block__mutmut_36": (
        "the cut only splits what is shown between the block and the re-read text, which is "
        "shown in the same step either way"
    ),
    f"{_D}_reasoning__mutmut_24": _NO_TOKEN,
    **{
        f"{_D}_append__mutmut_{n}": "the hold is at least one character, never zero"
        for n in (7, 10)
    },
    **{
        f"{_D}_parse__mutmut_{n}": "only whether any call was extracted is read, not how many"
        for n in (38, 39, 40)
    },
    **{f"{_R}_before__mutmut_{n}": _NEVER_PARSES for n in (5, 6, 12, 13, 20)},
    **{f"{_R}_before__mutmut_{n}": _STRING_END for n in (16, 18, 19)},
    f"{_R}_before__mutmut_8": _X_OUTSIDE,
    f"{_R}_code__mutmut_14": _X_OUTSIDE,
    f"{_R}_code__mutmut_15": (
        "a comma with no value before it stays, and the text then never parses, so the commas "
        "after it do not matter"
    ),
    f"{_R}_code__mutmut_4": "None as a slice's start means 0",
    f"{_R}_outside_strings__mutmut_5": "None as a slice's or find's start means 0",
    **{f"{_R}_outside_strings__mutmut_{n}": _CLOSED for n in (20, 22, 23)},
    **{
        f"{_R}_marked__mutmut_{n}": (
            "a key's tag only has to name no Python literal: no type is wanted for it either way"
        )
        for n in (3, 4)
    },
    **{
        f"{_R}_plain__mutmut_{n}": (
            "ToolSchemas refuses a schema holding $dynamicRef (unsupported_schema_keyword), so "
            "no repair under one passes the final check"
        )
        for n in (6, 7, 8)
    },
    f"{_R}repair_arguments__mutmut_27": _AND_OR,
    f"{_R}repair_arguments__mutmut_33": (
        "a call without a name is refused by the schema check (missing_name) whatever schema "
        "was read for it"
    ),
    f"{_V}named__mutmut_2": "the name is only cached: read again from the same head it is the same",
    **{f"{_VE}__init____mutmut_{n}": _FALSY for n in (7, 9, 11)},
    f"{_VE}_in_string__mutmut_35": _FALSY,
    f"{_VE}__init____mutmut_14": (
        "a carry of letters holds no bracket, quote or blank, and feed takes its length back out "
        "of the position it returns"
    ),
    **{
        f"{_VE}feed__mutmut_{n}": (
            "no step returns position 0: each returns a place past a character it read, or a "
            "negative carry mark"
        )
        for n in (31, 32)
    },
    f"{_V}__init____mutmut_9": "named() reads the head before it first returns the name",
    **{
        f"{_V}__init____mutmut_{n}": (
            "no head is read at that length first: a one-character head names no tool"
        )
        for n in (11, 12)
    },
    f"{_V}__init____mutmut_14": _NO_TOKEN,
    **{
        f"callgate.strategies.text._scan.x__stops__mutmut_{n}": (
            "the order is never read: _alternation sorts again, and the rest are sets, a max "
            "and any()"
        )
        for n in (3, 5, 8)
    },
    "callgate.strategies.text._scan.x__stops__mutmut_26": (
        "the empty prefix is never looked up: only suffixes of one character or more are"
    ),
    "callgate.strategies.text._scan.x__stops__mutmut_34": (
        "with no stop token nothing matches and nothing is partial, so the kept tail is never "
        "read for one"
    ),
    f"{_VE}_in_string__mutmut_21": "a backslash and a quote are never at the same place",
    f"{_VE}_in_string__mutmut_30": (
        "a one-character quote found at end always starts there, so startswith agrees"
    ),
    f"{_VE}_outside__mutmut_9": "the character is one the pattern matched, never an 'X'",
    **{
        f"{_VE}_outside__mutmut_{n}": (
            "three quotes at the end already opened a triple-quoted string the line before"
        )
        for n in (25, 26)
    },
    f"{_VE}_outside__mutmut_22": (
        "a JSON quote that ends the delta opens a string, so the value cannot close in that "
        "delta either way; carried, it is read again first in the next"
    ),
    "callgate.strategies.text._scan.xǁ_Blockǁ__init____mutmut_10": (
        "only a block open at the start has no partial tokens, and its head is never cut"
    ),
    "callgate.strategies.text._scan.xǁ_Blockǁ__init____mutmut_17": _NO_TOKEN,
    "callgate.strategies.text._scan.xǁ_Blockǁpayload__mutmut_1": (
        "joining a single part gives that part"
    ),
    f"{_D}_printing__mutmut_51": _NO_TOKEN,
    f"{_D}_printing__mutmut_63": (
        "with nothing to show, the text event is a self-loop before the prefix event"
    ),
    f"{_D}_end_formats__mutmut_6": "at the end at most one piece of text is shown",
    **{
        f"{_D}reset__mutmut_{n}": (
            "the reasoning tail is set to '' on entering reasoning, before it is ever read"
        )
        for n in (5, 6)
    },
    f"{_D}reset__mutmut_8": _NO_TOKEN,
    f"{_D}_fire__mutmut_1": (
        "every event whose action reads the text (release_block, call_in_reasoning) is "
        "fired with its text"
    ),
    **{f"{_D}reset__mutmut_{n}": _TRUTH for n in (9, 14)},
    # decision
    f"{_DEC}__init____mutmut_6": _TRUTH,
    f"{_DEC}__init____mutmut_11": _TRUTH,
    **{
        f"{_DEC}__init____mutmut_{n}": "plan() sets the observation before finish() reads it"
        for n in (8, 9, 10)
    },
    f"{_DEC}__init____mutmut_12": _QUIET_OFF,
    **{f"{_DEC}finish__mutmut_{n}": _QUIET_OFF for n in (33, 39, 40, 44, 45)},
    **{f"{_DEC}finish__mutmut_{n}": _CAST for n in (21, 25, 26, 27)},
    **{f"{_DEC}_answer__mutmut_{n}": _CAST for n in (16, 86)},
    **{
        f"{_DEC}_answer__mutmut_{n}": (
            "checked only spares the driver a second check of the same schemas, with one "
            "answer: not passing it (None, False) has the driver check again"
        )
        for n in (4, 37, 40)
    },
    **{
        f"{_DEC}_answer__mutmut_{n}": _BLOCKED_HAS_ERROR for n in (94, 95, 96, 97, 98, 99, 100, 101)
    },
    "callgate.driver.decision.x__first_error__mutmut_3": _BLOCKED_HAS_ERROR,
    f"{_DEC}_observe__mutmut_3": _TRUTH,
    **{f"{_DEC}_observe__mutmut_{n}": _SETTLED_ALIKE for n in (18, 19, 20, 23, 24, 34, 35)},
    f"{_DEC}finish__mutmut_36": (
        "a step with results observed 'owned' and ends executed or failed, never a "
        "self-loop, so quiet only when answering is quiet never"
    ),
    f"{_DEC}finish__mutmut_37": _SETTLED_ALIKE,
    f"{_DEC}finish__mutmut_38": (
        "the only observation that does not self-loop in its target is 'text' out of "
        "holding (to released); repeating it keeps released where a full step flows: "
        "both settled, no status, the same transitions onward"
    ),
    f"{_DEC}finish__mutmut_49": (
        "without a stamp no later step matches it, so the quiet-step shortcut is only turned off"
    ),
    "callgate.driver.decision.xǁOwnerǁprepare__mutmut_1": (
        "a Protocol's method body never runs: drivers implement prepare themselves"
    ),
    **{
        f"{_DEC}finish__mutmut_{n}": (
            "a refused answer is an error result, and a step with one reports call_failed "
            "either way (Driver._answered); executed and failed are both settled alike"
        )
        for n in (4, 5, 14)
    },
    f"{_DEC}finish__mutmut_3": "the view's answers are read as keys (what was answered) only",
    # ledger
    f"{_L}x_call_key__mutmut_4": _TRUTH,
    f"{_L}x_call_key__mutmut_21": _TRUTH,
    **{f"{_L}x_call_key__mutmut_{n}": _KEY_SPELLING for n in (8, 11, 24, 26)},
    **{f"{_L}x_call_key__mutmut_{n}": _KEY_JSON for n in (22, 25)},
    **{
        f"{_Q}{function}__mutmut_{n}": _SQL_CASE
        for function, numbers in (
            ("__init__", (24, 25)),
            ("start", (7, 8, 10, 11, 20, 21)),
            ("finish", (6, 7, 9, 10, 12)),
            ("forget", (7, 8, 10, 22, 23, 25)),
        )
        for n in numbers
    },
    **{
        f"{_L}xǁLedgerǁget__mutmut_{n}": (
            "a call running here is told so from its start time: still_running(here=True) "
            "reads neither the record's state nor its owner"
        )
        for n in (19, 20, 25, 26)
    },
    "callgate.ledger.store.xǁRecordǁdumps__mutmut_10": (
        "a record is dumped as a JSON list: the key separator never appears"
    ),
    f"{_L}x_call_key__mutmut_33": "'UTF-8' and 'utf-8' name one codec",
    **{f"{_L}xǁLedgerǁ_started_or__mutmut_{n}": _RACE for n in (22, 24, 25, 26, 27, 28, 29, 30)},
    **{f"{_L}x_call_key__mutmut_{n}": _KEY_SPELLING for n in (15, 16, 17, 18)},
    f"{_L}xǁLedgerǁ__init____mutmut_37": _TRUTH,
    f"{_L}xǁLedgerǁnext_turn__mutmut_1": _TRUTH,
    f"{_L}xǁLedgerǁ_started_or__mutmut_37": _TRUTH,
    f"{_L}xǁLedgerǁ_keep__mutmut_4": (
        "an answered call is in the answers, which get() reads before the running calls, "
        "and len() counts both as one set: a stale running entry is never read"
    ),
    f"{_L}xǁLedgerǁ_started_or__mutmut_8": (
        "a kept answer is only given again through _replayed, which takes the asking call"
    ),
    "callgate.ledger.store.xǁRecordǁdumps__mutmut_3": "ensure_ascii=None is false, as False is",
    "callgate.ledger.redis.xǁRedisStoreǁ__init____mutmut_16": (
        "the loop is only compared by identity with a running loop, which neither None nor '' is"
    ),
    "callgate.proxy.requests.x_read_request__mutmut_16": (
        "Python's codec names are case-insensitive: 'UTF-8' is the same codec as 'utf-8'"
    ),
    "callgate.proxy.gate.xǁGateCoreǁ__init____mutmut_13": (
        "the driver's wire only adds a wire's own leak formats, and only Cohere has any "
        "(WIRE_LEAKS); the gateway's three wires get the same default formats as Chat's"
    ),
    "callgate.proxy.gate.xǁGateCoreǁ_call__mutmut_4": (
        "a released native call's slot is always among the buffer's slots, so the default "
        "raw text is never returned"
    ),
    "callgate.proxy.wires.chat.xǁChatWriterǁplay_text__mutmut_1": (
        "play_text is called only on a learned shape, after two plain text frames were "
        "written, so the role was always sent"
    ),
    "callgate.proxy.wires.chat.xǁChatWriterǁfinal__mutmut_32": (
        "only forming text calls are kept by their TextRef; a native call's NativeRef is of "
        "another class, equal to none of them, so the lookup finds nothing either way"
    ),
    "callgate.proxy.wires.chat.xǁChatWriterǁfinal__mutmut_43": (
        "the loop runs only when no formed call is stranded, and then each formed call's "
        "released arguments continue what was sent (stranded_refs), so a formed call "
        "always has a remainder and 'or' takes the same branch as 'and'"
    ),
    "callgate.proxy.wires.chat.xǁChatWriterǁfinal__mutmut_118": (
        "the usage-alone chunk's choices are replaced by an empty list in the same dict "
        "display, so the delta its envelope was made with is never written"
    ),
    "callgate.proxy.wires.chat.xǁChatWriterǁ__init____mutmut_3": (
        "only the flag's truth is read, and None is false like False"
    ),
    "callgate.proxy.wires.messages.xǁMessagesReaderǁ_pass__mutmut_10": (
        "the head's wire is only compared with the Chat and Responses writers' own wires, "
        "which neither 'messages' nor None is"
    ),
    "callgate.proxy.wires.responses.xǁResponsesWriterǁ_forming__mutmut_5": (
        "the list is empty there, so adding to it is the same as assigning it"
    ),
    "callgate.proxy.wires.messages.xǁMessagesWriterǁ_forming__mutmut_6": (
        "the list is empty there, so adding to it is the same as assigning it"
    ),
    "callgate.proxy.wires.messages.xǁMessagesWriterǁ_end_shown__mutmut_19": (
        "stopping at the first accepted call that was not shown finishes the same calls: a "
        "turn's accepted calls are all shown or none (a native block is shown only from a "
        "Messages upstream, where every declared block streams; a text call beside native "
        "calls is set aside)"
    ),
    "callgate.proxy.wires.messages.xǁMessagesWriterǁ_streamed_event__mutmut_14": (
        "the reader streams a block only when its start's content_block is a mapping (it "
        "reads the block's type and name from it), so the test is always true"
    ),
    "callgate.proxy.wires.messages.xǁMessagesWriterǁfinal__mutmut_14": (
        "a stranded turn always has a notice: its set-aside call is withheld, a turn that "
        "showed arguments is never re-asked, and pass would have sent the call"
    ),
    "callgate.proxy.wires.messages.xǁMessagesWriterǁwrite__mutmut_25": (
        "a streamed block's event is always the first of its read's events (the reader puts "
        "what it forwards before the released text), so nothing is written before it"
    ),
    "callgate.proxy.gate.xǁGateCoreǁ_native_raw__mutmut_4": (
        "every native call's slot, accepted or refused, is among the buffer's slots, so "
        "next() always finds one and its default is never needed"
    ),
    **{
        f"callgate.proxy.gate.x__withheld__mutmut_{n}": (
            "a withheld result's is_error and refused flags are never read: the engine, its "
            "notices, pinning and the integrations read only its call and content"
        )
        for n in (4, 5, 8, 9, 10, 11)
    },
    "callgate.proxy.wires.responses.xǁResponsesWriterǁencode__mutmut_7": (
        "every event the Responses writer makes has a type, so the default is never used"
    ),
    "callgate.proxy.wires.chat.xǁChatReaderǁwhole__mutmut_49": (
        "the chunk's own 'choices' comes after the copied fields in the same dict display, "
        "so a copied 'choices' is always replaced"
    ),
    **{
        f"callgate.proxy.wires.chat.xǁChatWriterǁechoes__mutmut_{n}": (
            "reading no index (38) or no delta (39), echoes() declines the chunk, and the "
            "general path writes the same chunk (the echo only saves time; "
            "tests/proxy/test_proxy_forwarded_bytes.py)"
        )
        for n in (38, 39)
    },
    "callgate.proxy.core.x__tool_list__mutmut_76": (
        "the driver's tool descriptions are read only by Driver.tool_specs, which the "
        "gateway never calls: a request carries the client's own tools upstream"
    ),
    "callgate.proxy.gate.xǁGateCoreǁsettle__mutmut_27": (
        "unreachable: a turn whose verdict fails holds an error finding (past the findings "
        "limit, limit_exceeded), so the fallback finding is never made"
    ),
    "callgate.proxy.wires.chat.xǁChatWriterǁ_played__mutmut_7": (
        "a chunk the gate could not read gives one upstream error (each reader makes at most "
        "one per chunk), so the separator of the errors joined is never written"
    ),
    "callgate.proxy.wires.messages.xǁMessagesWriterǁ__init____mutmut_1": (
        "the engine sets writer.engine itself right after making its writer (and again for "
        "each repair's turn), so the engine given to the base constructor is never read"
    ),
    **{
        f"callgate.proxy.wires.forming.xǁFormingReaderǁread__mutmut_{n}": (
            "the buffer's partial_calls() lists only text calls of declared tools, each with "
            "its name read, so the check never skips one "
            "(tests/proxy/test_gateway_details.py states the behaviour)"
        )
        for n in (11, 15)
    },
    "callgate.proxy.wires.messages.xǁMessagesWriterǁechoes__mutmut_17": (
        "reading no delta, echoes() declines the event, and the general path writes the same "
        "event (the echo only saves time)"
    ),
    "callgate.proxy.wires.forming.x_stranded_refs__mutmut_4": (
        "formed is keyed by text references only, so a native call's slot is never found in "
        "it either way"
    ),
    "callgate.proxy.sse.xǁSSEReaderǁ_line__mutmut_5": (
        "a comment line read as a field has the empty name, which is neither data nor event, "
        "so it is skipped either way"
    ),
    "callgate.proxy.wires.chat.xǁChatReaderǁ_stream_args__mutmut_20": (
        "a nameless entry at an index not streamed then asks owns(None), which is False (no "
        "tool has an empty name), and a named one at a streamed index is added again to the "
        "set it is in: the same deltas either way"
    ),
    "callgate.proxy.sse.xǁSSEReaderǁfeed__mutmut_24": (
        "the flag is read only for its truth, and None is false like False"
    ),
    "callgate.proxy.sse.xǁSSEReaderǁfeed__mutmut_31": (
        "at start == size no line end is found, so the loop breaks as it would have ended"
    ),
    "callgate.proxy.sse.xǁSSEReaderǁevents__mutmut_11": (
        "an empty pending prefix joined to the read is the read itself"
    ),
    **{
        f"callgate.proxy.sse.xǁSSEReaderǁevents__mutmut_{n}": (
            "a data line not taken in place goes to _line, which appends the same value to "
            "the same pieces (one leading space dropped): the same events"
        )
        for n in (17, 19, 20)
    },
    "callgate.proxy.core.xǁThinkSplitterǁ__init____mutmut_1": (
        "the flag is read only for its truth and negated to a bool, and None is false like False"
    ),
    "callgate.proxy.core.xǁThinkSplitterǁpieces__mutmut_35": (
        "a tail as long as the tag or longer would hold the whole tag, which find() found "
        "first: only shorter tails can match"
    ),
    **{
        f"callgate.proxy.engine.xǁEngineǁfeed_unchanged__mutmut_{n}": (
            "with no echo asked for, the chunk takes the general path (reader, then "
            "write_unchanged), which gives the same chunks, None when it goes as it came: "
            "the echo only saves time"
        )
        for n in (2, 3)
    },
    "callgate.proxy.engine.xǁEngineǁplay_frame__mutmut_112": (
        "the learned shape's echoed flag is read only for its truth, and None is false like False"
    ),
    "callgate.proxy.engine.x__name_of__mutmut_14": (
        "the error handler is used only for a lone surrogate, which a type can hold only "
        "through a \\u escape that fast_object (msgspec) refuses: such an event goes through "
        "play() and is never named"
    ),
    "callgate.proxy.gate.xǁGateCoreǁstep__mutmut_29": (
        "the gateway's steps are read only for their text and responses (finish_turn, "
        "settle); a step's chunk position is never read"
    ),
    **{
        f"callgate.proxy.gate.xǁGateCoreǁsettle__mutmut_{n}": (
            "unreachable: a turn whose verdict fails holds an error finding (past the findings "
            "limit, limit_exceeded), so the fallback finding is never made"
        )
        for n in (28, 30)
    },
    "callgate.proxy.engine.xǁEngineǁ_unechoed__mutmut_8": (
        "every writer writes nothing for an empty text piece (the Chat reader makes one for "
        "each chunk anyway), so an empty piece and none give the same output"
    ),
    "callgate.proxy.gate.xǁGateCoreǁ_repaired__mutmut_3": (
        "calls are made only in settle(), which the engine calls right after end() set the "
        "turn, so the turn is never None there"
    ),
    "callgate.proxy.wires.messages.xǁMessagesWriterǁencode__mutmut_7": (
        "every event the Messages writer makes or forwards has a type, so the default is never used"
    ),
    "callgate.proxy.wires.messages.x__events_of__mutmut_96": (
        "a thinking delta of null is read as empty text by the reader and by assemble() "
        "(_str), the same as the empty default"
    ),
    "callgate.proxy.engine.xǁEngineǁ_echoed__mutmut_8": (
        "the released text as a piece goes to write_unchanged, which answers None when the "
        "chunk goes as it came: the same chunks, the shortcut only saves time"
    ),
    "callgate.proxy.wires.translate.x__sampling__mutmut_4": (
        "the stop sequences kept in the first dict get the same value from the second: only "
        "the key's place in the JSON object differs"
    ),
    "callgate.proxy.wires.translate.x__block__mutmut_34": (
        "is_error is true only on a Messages client's tool result, and a Messages request is "
        "never translated to Messages (on its own wire it goes as it came)"
    ),
    **{
        f"callgate.proxy.wires.conversation.x__messages_parts__mutmut_{n}": (
            "the is_error read from a Messages request is written only by the Messages writer, "
            "which never gets a Messages request (Chat and Responses have no such flag)"
        )
        for n in (82, 85)
    },
    "callgate.proxy.wires.conversation.x__from_responses__mutmut_44": (
        "_settings tells only an unknown key (refused) and 'hint' (noted) apart: any other "
        "role carries the key the same way"
    ),
    "callgate.proxy.wires.conversation.x__from_responses__mutmut_227": (
        "_text of a string is the string itself"
    ),
    "callgate.proxy.wires.base.xǁWriterǁarguments_shown__mutmut_1": (
        "the Chat, Messages and Responses writers each define arguments_shown, so the base's "
        "is never called"
    ),
    **{
        f"callgate.proxy.wires.forming.xǁFormingReaderǁread__mutmut_{n}": (
            "a native record always has a NativeRef and a text record a TextRef, so the "
            "isinstance test alone decides which records are skipped"
        )
        for n in (4, 6, 7)
    },
    "callgate.proxy.wires.responses.xǁResponsesWriterǁ_response__mutmut_39": (
        "the upstream's created_at, not popped, stays in the fields spread after it and sets "
        "the same value: only the key's place differs"
    ),
    "callgate.proxy.wires.translate.x__to_responses__mutmut_53": (
        "a request with stop sequences is refused right after, so the body that would carry "
        "them is never sent"
    ),
    "callgate.proxy.wires.responses.xǁResponsesWriterǁflush__mutmut_2": (
        "write() of one empty Text writes nothing (it neither starts the response nor opens "
        "a message), the same as no write"
    ),
    "callgate.proxy.wires.responses.xǁResponsesWriterǁ_response__mutmut_40": (
        "the upstream's created_at, not popped, stays in the fields spread after it and sets "
        "the same value: only the key's place differs"
    ),
    "callgate.proxy.engine.xǁEngineǁ_unshaped__mutmut_56": (
        "a shape is kept only when both probes read back as their own text, so one learned "
        "from another echoed frame is as right: it decides which frames skip parsing, not "
        "what is sent"
    ),
    "callgate.proxy.engine.xǁEngineǁfeed_unchanged__mutmut_34": (
        "only the Chat writer answers None (a chunk sent as it came), and no Chat chunk ends "
        "a stream by itself, so an ending chunk always has chunks written"
    ),
    "callgate.proxy.gate.xǁGateCoreǁ_text_slot__mutmut_5": (
        "a text reference exists only once the buffer's gate made it, so a TextRef never "
        "meets a missing gate, and a native reference is never among the text slots"
    ),
}
EQUIVALENT.update(TABLE_EQUIVALENT)
