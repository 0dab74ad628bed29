#!/usr/bin/python3
"""chat_templates_reference.py — the chat templates of published models and
what Jinja renders for conversations with them, for tfm_chat's tests.

The templates are the "chat_template" texts of the models' own
tokenizer_config.json files (Qwen2-0.5B-Instruct, Meta-Llama-3-8B-Instruct,
Mistral-7B-Instruct-v0.1/v0.2, Phi-3-mini-4k-instruct, Phi-3.5-mini,
gemma-7b-it / gemma-2-9b-it, SmolLM2, Llama-2-chat's, Qwen1.5's) and one
written in the indented style of newer templates ({%- ... %}).  They are
rendered as transformers' apply_chat_template renders them: python3-jinja2's
ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, a
raise_exception function, messages, add_generation_prompt and the special
tokens that are set (bos_token, eos_token).

Writes into test/fixtures/chat/:
  templates.json   {name: template text}
  cases.json       [{template, messages, add_generation_prompt, bos_token,
                     eos_token, rendered} or {..., error}]
  cases.tsv        the same for the C unit test: "T<TAB>name<TAB>hex text",
                   "C<TAB>name<TAB>add_gen<TAB>hex bos|-<TAB>hex eos|-<TAB>
                   roles and contents as hex role:hex content,...<TAB>
                   R hex rendered | E hex error message"

Run from the repository root: /usr/bin/python3 test/reference/chat_templates_reference.py
"""
import json
import os

from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

OUT = "test/fixtures/chat"

TEMPLATES = {
    "qwen2": "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    "llama3": "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}",
    "mistral": "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}",
    "phi3": "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') %}{{'<|user|>' + '\\n' + message['content'] + '<|end|>' + '\\n' + '<|assistant|>' + '\\n'}}{% elif (message['role'] == 'assistant') %}{{message['content'] + '<|end|>' + '\\n'}}{% endif %}{% endfor %}",
    "phi3_5": "{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}{{'<|system|>\\n' + message['content'] + '<|end|>\\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\\n' + message['content'] + '<|end|>\\n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\\n' + message['content'] + '<|end|>\\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ eos_token }}{% endif %}",
    "gemma": "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}",
    "smollm2": "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    "llama2": "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\\\n' + system_message + '\\\\n<</SYS>>\\\\n\\\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
    "qwen1_5": "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful assistant<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content']}}{% if (loop.last and add_generation_prompt) or not loop.last %}{{ '<|im_end|>' + '\\n'}}{% endif %}{% endfor %}{% if add_generation_prompt and messages[-1]['role'] != 'assistant' %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    "chatml_indented": """{%- if messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
{%- else %}
    {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {{- '<|im_end|>\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
""",
    # trim_blocks and lstrip_blocks on a template written over lines
    "lines": """{# one turn a line #}
{% for m in messages %}
    {% if m.role == 'system' %}
[{{ m.role | upper }}] {{ m.content }}
    {% else %}
{{ loop.index }}/{{ loop.length }} {{ m.role }}: {{ m.content ~ '' }}{{ ' (last)' if loop.last else '' }}
    {% endif %}
{% endfor %}
{% if add_generation_prompt %}assistant:{% endif %}
""",
}

TOKENS = {
    "qwen2": (None, "<|im_end|>"), "llama3": ("<|begin_of_text|>", "<|eot_id|>"),
    "mistral": ("<s>", "</s>"), "phi3": ("<s>", "<|endoftext|>"), "phi3_5": ("<s>", "<|endoftext|>"),
    "gemma": ("<bos>", "<eos>"), "smollm2": (None, "<|im_end|>"), "llama2": ("<s>", "</s>"),
    "qwen1_5": (None, "<|im_end|>"), "chatml_indented": (None, "<|im_end|>"), "lines": ("<s>", "</s>"),
}

MIXED = "Prices: 3.14159 and 1,000,000 — 東京は日本の首都です。 🎉👍🏽 café naïve e\u0301\n  two  spaces\n\n\ttab"
CONVERSATIONS = {
    "user": [{"role": "user", "content": "Hello!"}],
    "turns": [{"role": "user", "content": "What is 2+2?"},
              {"role": "assistant", "content": "  It is 4.  "},
              {"role": "user", "content": MIXED}],
    "system": [{"role": "system", "content": "You are terse."},
               {"role": "user", "content": "Hi there"},
               {"role": "assistant", "content": "Hello! How can I help?"},
               {"role": "user", "content": "  Tell me a joke.\n"}],
    "two_users": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
    "ends_with_assistant": [{"role": "user", "content": "Say hi"},
                            {"role": "assistant", "content": "hi"}],
}


def render(env, text, messages, add_gen, bos, eos):
    ctx = {"messages": messages, "add_generation_prompt": add_gen}
    if bos is not None:
        ctx["bos_token"] = bos
    if eos is not None:
        ctx["eos_token"] = eos
    return env.from_string(text).render(**ctx)


def main():
    def raise_exception(message):
        raise TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    os.makedirs(OUT, exist_ok=True)
    cases = []
    for name, text in TEMPLATES.items():
        bos, eos = TOKENS[name]
        for cname, msgs in CONVERSATIONS.items():
            for add_gen in (True, False):
                case = {"template": name, "conversation": cname, "messages": msgs,
                        "add_generation_prompt": add_gen, "bos_token": bos, "eos_token": eos}
                try:
                    case["rendered"] = render(env, text, msgs, add_gen, bos, eos)
                except TemplateError as e:
                    case["error"] = str(e)
                cases.append(case)
    with open(os.path.join(OUT, "templates.json"), "w", encoding="utf-8") as f:
        json.dump(TEMPLATES, f, ensure_ascii=False, indent=1)
        f.write("\n")
    with open(os.path.join(OUT, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False)
        f.write("\n")

    def hx(s):
        return "-" if s is None else s.encode("utf-8").hex()

    with open(os.path.join(OUT, "cases.tsv"), "w") as f:
        f.write("# chat templates and Jinja's renderings; made by test/reference/chat_templates_reference.py\n")
        for name, text in TEMPLATES.items():
            f.write("T\t%s\t%s\n" % (name, hx(text)))
        for c in cases:
            msgs = ",".join("%s:%s" % (hx(m["role"]), hx(m["content"])) for m in c["messages"])
            res = ("R\t" + hx(c["rendered"])) if "rendered" in c else ("E\t" + hx(c["error"]))
            f.write("C\t%s\t%d\t%s\t%s\t%s\t%s\n" % (c["template"], c["add_generation_prompt"],
                                                     hx(c["bos_token"]), hx(c["eos_token"]), msgs, res))
    errors = sum("error" in c for c in cases)
    print("%d templates, %d cases (%d refused by the template)" % (len(TEMPLATES), len(cases), errors))


if __name__ == "__main__":
    main()
