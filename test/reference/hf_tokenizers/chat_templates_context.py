#!/usr/bin/env python3
"""chat_templates_context.py — the real chat templates of Qwen3 and Gemma 3
(the tokenizer_config.json files of tokenizers.tsv's packages, fetched with
their sha256 checked by scripts/fetch_hf_tokenizers.sh) rendered for
conversations beyond role and text: Qwen3's tools, tool calls (arguments as
objects and as strings, with and without the "function" wrapper), tool
responses (one and several in a row), reasoning (reasoning_content, <think>
in the content, before and after the last user query, enable_thinking
false and true), and Gemma 3's system-prompt rules (the system turn folded
into the first user turn, its content as a string or as a list of parts,
user contents as parts with images, the alternation it enforces, the
content types it refuses).

Rendered (jinja2 3.1.6 was used) as transformers' apply_chat_template renders them (its
_compile_jinja_template): python3-jinja2's ImmutableSandboxedEnvironment
with trim_blocks, lstrip_blocks and the loopcontrols extension, its tojson
(json.dumps(x, ensure_ascii=False, indent=None, separators=None,
sort_keys=False)), raise_exception, and the context as keyword arguments:
messages, tools, add_generation_prompt, the special tokens, enable_thinking.

Writes test/fixtures/chat/hf_context_cases.tsv for test/unit/test_chat_context.c:
  "T<TAB>name<TAB>hex template"
  "J<TAB>name<TAB>hex context JSON (json.dumps of the very dict rendered)<TAB>
   R hex rendered | E hex error message"

Run from the repository root:
  python3 test/reference/hf_tokenizers/chat_templates_context.py "$(scripts/fetch_hf_tokenizers.sh)"
"""
import json
import os
import sys

import jinja2.ext
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

OUT = "test/fixtures/chat/hf_context_cases.tsv"


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise TemplateError(message)


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city, now.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city's name, e.g. \"Paris\""},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Searches the web.\nReturns the top results.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "max_results": {"type": "integer", "default": 5},
        "safe": {"type": "boolean"}, "lang": {"type": ["string", "null"]}},
        "required": ["query"]}}}


def call(name, args, wrap=True):
    c = {"name": name, "arguments": args}
    return {"type": "function", "function": c} if wrap else c


QWEN3 = [
    # tools, with and without a system turn
    {"tools": [WEATHER], "messages": [{"role": "user", "content": "What's the weather in Paris?"}]},
    {"tools": [WEATHER, SEARCH], "messages": [{"role": "system", "content": "You are a careful assistant."},
                                              {"role": "user", "content": "Weather in Kraków, in °C?"}]},
    # a whole round: a call, its response, the answer
    {"tools": [WEATHER], "messages": [
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris", "unit": "celsius"})]},
        {"role": "tool", "content": "{\"temperature\": 21.5, \"sky\": \"clear\"}"},
        {"role": "assistant", "content": "It is 21.5 °C and clear in Paris."}]},
    # two calls in one turn, two responses in a row, text before the calls, arguments as a string
    {"tools": [WEATHER, SEARCH], "messages": [
        {"role": "system", "content": "Use the tools."},
        {"role": "user", "content": "Compare Oslo and Rome, and find news on both."},
        {"role": "assistant", "content": "Let me check both cities.", "tool_calls": [
            call("get_weather", {"city": "Oslo"}), call("get_weather", "{\"city\": \"Rome\"}")]},
        {"role": "tool", "content": "Oslo: -3 °C, snow"},
        {"role": "tool", "content": "Rome: 14 °C, rain"},
        {"role": "assistant", "content": "", "tool_calls": [
            call("search", {"query": "Oslo \"news\"\ttoday\n", "max_results": 3, "safe": True, "lang": None,
                            "tags": ["a", 1, 2.5, [], {}], "émoji": "🙂 ünïcode"}, wrap=False)]},
        {"role": "tool", "content": "<tool_response>nested</tool_response>"},
        {"role": "user", "content": "Thanks!"}]},
    # reasoning: reasoning_content after the last query, <think> in the content before and after it
    {"messages": [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "<think>\nAdd them.\n</think>\n\n4"},
        {"role": "user", "content": "And 3+3?"},
        {"role": "assistant", "content": "6", "reasoning_content": "\nThree and three.\n"}]},
    {"messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "<think>\nGreet back.\n</think>\n\nHello!"}]},
    {"messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "no think tags </think>\nhere"},
        {"role": "user", "content": "ok"},
        {"role": "assistant", "content": "<think>\n\n</think>\n\n  spaced answer"}]},
    # a multi-step tool round after the query: the reasoning of every turn after it kept
    {"tools": [SEARCH], "messages": [
        {"role": "user", "content": "Find the capital of Australia."},
        {"role": "assistant", "content": "", "reasoning_content": "I should search.",
         "tool_calls": [call("search", {"query": "capital of Australia"})]},
        {"role": "tool", "content": "Canberra is the capital."},
        {"role": "assistant", "content": "<think>\nThe tool says Canberra.\n</think>\n\nCanberra."}]},
    # a user turn that is a tool response: not the last query
    {"tools": [SEARCH], "messages": [
        {"role": "user", "content": "Search for tfm."},
        {"role": "assistant", "content": "", "tool_calls": [call("search", {"query": "tfm"})]},
        {"role": "user", "content": "<tool_response>\nno results\n</tool_response>"},
        {"role": "assistant", "content": "<think>\nNothing found.\n</think>\n\nNothing found."}]},
    {"messages": [{"role": "user", "content": "Think or not?"}], "enable_thinking": False},
    {"messages": [{"role": "user", "content": "Think or not?"}], "enable_thinking": True},
    {"tools": [], "messages": [{"role": "user", "content": "An empty tools list is no tools."}]},
]

GEMMA3 = [
    {"messages": [{"role": "system", "content": "You are kind."}, {"role": "user", "content": "Hi there!"}]},
    {"messages": [{"role": "system", "content": "  Answer in French.\n"}, {"role": "user", "content": "Hi"},
                  {"role": "assistant", "content": " Bonjour ! "}, {"role": "user", "content": "How are you?"}]},
    {"messages": [{"role": "system", "content": [{"type": "text", "text": "System as parts."}]},
                  {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": " Describe this. "}]}]},
    {"messages": [{"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"},
                                               {"type": "image", "url": "x.png"}]}]},
    {"messages": [{"role": "system", "content": "Rules."}, {"role": "assistant", "content": "I speak first"}]},
    {"messages": [{"role": "system", "content": "Rules."}, {"role": "user", "content": "a"},
                  {"role": "user", "content": "b"}]},
    {"messages": [{"role": "system", "content": "Only a system turn."}]},
    {"messages": [{"role": "user", "content": 42}]},
    {"messages": [{"role": "user", "content": None}]},
    {"messages": [{"role": "system", "content": ""}, {"role": "user", "content": "empty system"}]},
]


def main():
    cache = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/tfm/hf-tokenizers")
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    lines = ["# the real chat templates of Qwen3 and Gemma 3 rendered by python3-jinja2 as transformers does; "
             "made by test/reference/hf_tokenizers/chat_templates_context.py"]
    n = 0
    for name, convs in (("qwen3", QWEN3), ("gemma3", GEMMA3)):
        cfg = json.load(open(os.path.join(cache, name, "tokenizer_config.json"), encoding="utf-8"))
        text = cfg["chat_template"]
        tpl = env.from_string(text)
        lines.append("T\thf_%s\t%s" % (name, text.encode().hex()))
        for conv in convs:
            for agp in (False, True):
                ctx = dict(conv)
                ctx["add_generation_prompt"] = agp
                for tok in ("bos_token", "eos_token"):
                    t = cfg.get(tok)
                    t = t["content"] if isinstance(t, dict) else t
                    if t is not None:
                        ctx[tok] = t
                try:
                    res = "R\t" + tpl.render(**ctx).encode().hex()
                except TemplateError as e:
                    res = "E\t" + str(e).encode().hex()
                lines.append("J\thf_%s\t%s\t%s" % (name, json.dumps(ctx, ensure_ascii=False).encode().hex(), res))
                n += 1
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%d cases -> %s" % (n, OUT))


if __name__ == "__main__":
    main()
