"""Token totals (reference 3.5): history usage sums, and the episode keys that replace them."""

from __future__ import annotations

from ..stats import FLOAT_MAX_INT, number_or_none
from .recorded import refuse_number
from .sums import running_add

#: Reference 3.5, per token field: the history usage keys (the field's, then its older name)
#: and the episode ``extra`` key whose number replaces the history sum.
TOKEN_SOURCES = {
    "input_tokens": (("input_tokens", "prompt_tokens"), "prompt_tokens"),
    "output_tokens": (("output_tokens", "completion_tokens"), "completion_tokens"),
    "total_tokens": (("total_tokens",), "total_tokens"),
    "cached_input_tokens": (("cached_input_tokens", "cached_tokens"), "cached_prompt_tokens"),
    "reasoning_tokens": (("reasoning_tokens",), "reasoning_tokens"),
}
#: The history keys of each field, by name for ``token_sums``.
(_INPUT, _INPUT_OLD), (_OUTPUT, _OUTPUT_OLD), (_TOTAL,), (_CACHED, _CACHED_OLD), (_REASONING,) = (
    keys for keys, _ in TOKEN_SOURCES.values()
)


def usage_count(usage: dict, key: str, fallback: str | None) -> int | float | None:
    """One call's count of a field: ``key``'s number, else ``fallback``'s (3.5, R9, R36)."""
    value = number_or_none(usage.get(key))
    if value is None and fallback is not None:
        value = number_or_none(usage.get(fallback))
    return value


def token_sums(usages: list[dict], refused: list | None = None,
               where: list[int] | None = None) -> dict[str, int | float | None]:
    """The five history token fields over the model calls' ``usage`` mappings (3.5, R9, R36).

    Per call, each field is its key's number, else its older key's (input_tokens ->
    prompt_tokens, output_tokens -> completion_tokens, cached_input_tokens -> cached_tokens);
    a call without total_tokens counts its own input + output when both are known. A field
    that some call lacks is unavailable (None) for the whole attempt, and so is a sum beyond
    the float range (R42).

    One pass over the calls. A plain integer in the float range (the common case) is taken
    as it is found and added exactly; any other value goes through ``usage_count``, and
    there, with ``refused`` given, a value read and refused as not a number is added to it
    (``_note``; ``where``: each usage's message index in history.json, by default its
    position). A count is read only while its field is still known: after a call that lacks
    it, it is not (and not checked).
    """
    limit = FLOAT_MAX_INT
    inputs = outputs = totals = cached = reasoning = 0  # None once a call lacks the field
    if refused is not None and where is None:
        where = list(range(len(usages)))
    for n, usage in enumerate(usages):
        get = usage.get
        i = get(_INPUT)
        if i is None:
            i = get(_INPUT_OLD)
        if type(i) is int and -limit <= i <= limit:
            if inputs is not None:
                inputs += i
        else:
            if refused is not None:
                _note(refused, where[n], usage, "input_tokens", _INPUT, _INPUT_OLD)
            i = usage_count(usage, _INPUT, _INPUT_OLD)
            inputs = None if i is None or inputs is None else running_add(inputs, i)
        o = get(_OUTPUT)
        if o is None:
            o = get(_OUTPUT_OLD)
        if type(o) is int and -limit <= o <= limit:
            if outputs is not None:
                outputs += o
        else:
            if refused is not None:
                _note(refused, where[n], usage, "output_tokens", _OUTPUT, _OUTPUT_OLD)
            o = usage_count(usage, _OUTPUT, _OUTPUT_OLD)
            outputs = None if o is None or outputs is None else running_add(outputs, o)
        t = get(_TOTAL)
        if t is None and i is not None and o is not None:
            t = i + o  # R9: a call without a total counts its own input + output
        if type(t) is int and -limit <= t <= limit:
            if totals is not None:
                totals += t
        else:
            if refused is not None:
                _note(refused, where[n], usage, "total_tokens", _TOTAL, None)
            t = usage_count(usage, _TOTAL, None)
            if t is None and i is not None and o is not None:
                t = i + o
            totals = None if t is None or totals is None else running_add(totals, t)
        if cached is not None:
            c = get(_CACHED)
            if c is None:
                c = get(_CACHED_OLD)
            if type(c) is int and -limit <= c <= limit:
                cached += c
            else:
                if refused is not None:
                    _note(refused, where[n], usage, "cached_input_tokens", _CACHED, _CACHED_OLD)
                c = usage_count(usage, _CACHED, _CACHED_OLD)
                cached = None if c is None else running_add(cached, c)
        if reasoning is not None:
            r = get(_REASONING)
            if type(r) is int and -limit <= r <= limit:
                reasoning += r
            else:
                if refused is not None:
                    _note(refused, where[n], usage, "reasoning_tokens", _REASONING, None)
                r = number_or_none(r)
                reasoning = None if r is None else running_add(reasoning, r)
    return {
        "input_tokens": number_or_none(inputs),
        "output_tokens": number_or_none(outputs),
        "total_tokens": number_or_none(totals),
        "cached_input_tokens": number_or_none(cached),
        "reasoning_tokens": number_or_none(reasoning),
    }


def _note(refused: list, index: int, usage: dict, field: str, key: str, older: str | None) -> None:
    """Add to ``refused`` the counts of ``field`` that one call's usage has and ``token_sums``
    refuses as not numbers (R36, R42): ``key``'s, then ``older``'s when it is read (``key``
    has no number), each as (``[<message index>].usage.<key>``, value, what became of it)."""
    value = usage.get(key)
    instead = (f"{older} read instead" if older else
               "the call's input + output counted instead" if field == "total_tokens" else
               f"the attempt's {field} is unavailable")
    refuse_number(refused, f"[{index}].usage.{key}", value, f"not counted, {instead}")
    if older is not None and number_or_none(value) is None:
        refuse_number(refused, f"[{index}].usage.{older}", usage.get(older),
                      f"not counted, the attempt's {field} is unavailable")
