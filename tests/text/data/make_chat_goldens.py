#!/usr/bin/env python3
"""Renders extra chat-format goldens with Jinja2 (the reference renderer of the template).

Usage: make_chat_goldens.py SHARED_DIR > gemma4-extra-chat-goldens.json
Needs python3-jinja2 (Debian). The output is committed; the C++ renderer is tested
against it (tests/text/chat_format_golden_test.cpp). Same sandbox settings as the
shared goldens: trim_blocks, lstrip_blocks, loopcontrols.
"""
import json
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "Local time",
    "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}}}
NESTED = {"type": "function", "function": {
    "name": "find_orders", "description": "Search orders",
    "parameters": {"type": "object", "properties": {
        "filter": {"type": "object", "description": "Mongo-like filter", "properties": {
            "$and": {"type": "array", "items": {"type": "object", "properties": {
                "field": {"type": "string"}, "gt": {"type": "number"}}, "required": ["field"]}},
            "city": {"type": "string", "nullable": True}}, "required": ["$and"]},
        "limit": {"type": "integer", "description": "Max rows"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        "Zeta": {"type": "boolean"}, "alpha": {"type": "number"},
        "type": {"type": "string", "description": "skipped by the template"},
        "mixed": {"type": ["string", "null"]},
        "free": {"type": "object"},
        "matrix": {"type": "array", "items": {"type": ["integer", "null"], "minItems": 2, "nullable": None}},
    }, "required": ["filter"]}}}
NO_TYPE = {"type": "function", "function": {
    "name": "no_type", "description": "Parameters without a type",
    "parameters": {"properties": {"x": {"type": "string"}}, "required": ["x"]}}}
EMPTY = {"type": "function", "function": {"name": "ping", "description": "No parameters", "parameters": {}}}
NO_PARAMS = {"type": "function", "function": {"name": "noop", "description": ""}}


def call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


CASES = [
    ("nested_schema", {"messages": [{"role": "user", "content": "Find orders"}],
                       "tools": [NESTED, NO_TYPE, EMPTY, NO_PARAMS], "add_generation_prompt": True}),
    ("two_tools_thinking_system", {"messages": [{"role": "system", "content": "  Be brief.\n"},
                                                {"role": "user", "content": "Weather and time in Oslo?"}],
                                   "tools": [WEATHER, TIME], "add_generation_prompt": True,
                                   "enable_thinking": True}),
    ("parallel_results_out_of_order", {"messages": [
        {"role": "user", "content": "Weather and time in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [
            call("c1", "get_weather", {"city": "Oslo"}), call("c2", "get_time", {"tz": "Europe/Oslo"})]},
        {"role": "tool", "tool_call_id": "c2", "content": "12:00"},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": -3.5, \"sky\": \"snow\"}"},
        {"role": "user", "content": "Thanks. And tomorrow?"}],
        "tools": [WEATHER, TIME], "add_generation_prompt": True}),
    ("tool_chain_then_answer", {"messages": [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": "", "tool_calls": [call("a", "get_weather", {"city": "Oslo", "unit": "c"})]},
        {"role": "tool", "tool_call_id": "a", "content": "sunny, 3"},
        {"role": "assistant", "content": "It is sunny and 3 degrees."},
        {"role": "user", "content": "Thanks!"}], "tools": [WEATHER], "add_generation_prompt": True}),
    ("pending_tool_call", {"messages": [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": "", "tool_calls": [call("a", "get_weather", {"city": "Oslo"})]}],
        "tools": [WEATHER], "add_generation_prompt": True}),
    ("argument_values", {"messages": [
        {"role": "user", "content": "Set it"},
        {"role": "assistant", "content": "", "tool_calls": [call("v", "set_volume", {
            "level": 42, "muted": False, "device": None, "gain": -3.5, "big": 1e16, "small": 1e-5,
            "tenth": 0.1, "thousand": 1e3, "whole": 2.0, "neg": -0.0, "B": "x", "a": [1, "two", True, None],
            "nested": {"k": {"deep": [{"x": 1}]}, "Q": "it's \"quoted\"\nnew line"}})]},
        {"role": "tool", "tool_call_id": "v", "content": "ok"}], "add_generation_prompt": True}),
    ("reasoning_before_and_after_last_user", {"messages": [
        {"role": "user", "content": "First"},
        {"role": "assistant", "reasoning_content": "old thought", "content": "",
         "tool_calls": [call("x", "get_time", {"tz": "UTC"})]},
        {"role": "tool", "tool_call_id": "x", "content": "noon"},
        {"role": "assistant", "content": "<|channel>thought\nhidden<channel|>It is noon."},
        {"role": "user", "content": "Second"},
        {"role": "assistant", "reasoning_content": "new thought", "content": "Checking.",
         "tool_calls": [call("y", "get_time", {"tz": "CET"})]},
        {"role": "tool", "tool_call_id": "y", "content": [{"type": "text", "text": "one "},
                                                          {"type": "text", "text": "pm"}]}],
        "tools": [TIME], "add_generation_prompt": True, "enable_thinking": True}),
    ("mid_conversation_system", {"messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello."},
        {"role": "system", "content": "Now answer in French."}, {"role": "user", "content": "bye"}],
        "add_generation_prompt": True}),
    ("developer_first", {"messages": [{"role": "developer", "content": "Only JSON."},
                                      {"role": "user", "content": "Give me a number."}],
                         "add_generation_prompt": True}),
    ("strip_thinking_variants", {"messages": [
        {"role": "user", "content": "\u3000 spaced\u00a0\t"},
        {"role": "assistant", "content": "A<|channel>x<channel|>B<|channel>unterminated"},
        {"role": "user", "content": [{"type": "text", "text": "  part one "}, {"type": "image"},
                                     {"type": "text", "text": " part two  "}, {"type": "audio"},
                                     {"type": "video"}]},
        {"role": "assistant", "content": [{"type": "text", "text": " <|channel>t<channel|> kept "}]}],
        "add_generation_prompt": False}),
    ("system_only", {"messages": [{"role": "system", "content": "You are a poet."}],
                     "add_generation_prompt": True}),
    ("bug52_tool_result_thinking_off", {"messages": [
        {"role": "system", "content": "Repeat the zz_code verbatim."},
        {"role": "user", "content": "Get the code"},
        {"role": "assistant", "content": None, "tool_calls": [call("c1", "get_code", {})]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"a_status\":\"open\",\"zz_code\":\"ZQX-7731\"}"}],
        "add_generation_prompt": True, "enable_thinking": False}),
    ("content_and_tool_calls_and_results", {"messages": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [call("w", "get_weather", {"city": "Rome"})]},
        {"role": "tool", "tool_call_id": "w", "content": ""}], "tools": [WEATHER],
        "add_generation_prompt": True}),
    ("multiple_leading_system_unmerged", {"messages": [
        {"role": "system", "content": "You are terse."}, {"role": "system", "content": "Memory: likes tea."},
        {"role": "user", "content": "hi"}], "add_generation_prompt": True, "merge_leading_system": False}),
    ("thinking_no_system", {"messages": [{"role": "user", "content": "Is 221 prime?"}],
                            "add_generation_prompt": True, "enable_thinking": True}),
    ("unicode_and_markup_in_user", {"messages": [
        {"role": "user", "content": "naïve café — 日本語 😀 <b>bold</b>"}], "add_generation_prompt": True}),
]


def main():
    shared = sys.argv[1]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    out = []
    for name in ("google-gemma-4-31B-it.jinja", "google-gemma-4-31B-it-interleaved.jinja"):
        src = open(f"{shared}/test-assets/chat-templates/{name}").read()
        tmpl = env.from_string(src)
        for case, inputs in CASES:
            kwargs = {k: v for k, v in inputs.items() if k != "merge_leading_system"}
            rendered = tmpl.render(bos_token="<bos>", **kwargs)
            out.append({"template": name, "case": case, "inputs": inputs, "rendered": rendered})
    json.dump({"renderer": f"jinja2 {jinja2.__version__}, trim_blocks+lstrip_blocks+loopcontrols",
               "goldens": out}, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
